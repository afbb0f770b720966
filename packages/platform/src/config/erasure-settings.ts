import { integer, type Setting } from './setting-parsers.js'

/* The settings of the erasure runner (erasures/erasure-runner.ts). */

type ErasureKey = 'erasureBatch' | 'erasureRate' | 'erasureLeaseSeconds'

export const erasureSettings: { [K in ErasureKey]: Setting<K> } = {
  erasureBatch: {
    key: 'erasureBatch',
    env: 'EARSHOT_ERASURE_BATCH',
    parse: integer(1, 1000),
    rule: 'a number of recordings from 1 to 1000',
    fallback: 5,
  },
  erasureRate: {
    key: 'erasureRate',
    env: 'EARSHOT_ERASURE_RATE',
    parse: integer(1, 100_000),
    rule: 'a number of recordings a second from 1 to 100000',
    fallback: 50,
  },
  erasureLeaseSeconds: {
    key: 'erasureLeaseSeconds',
    env: 'EARSHOT_ERASURE_LEASE',
    parse: integer(1, 3600),
    rule: 'a number of seconds from 1 to 3600',
    fallback: 30,
  },
}
