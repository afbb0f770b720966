import type { PlatformConfig } from './platform-config.js'

/** One setting: its config key, environment variable, parser, rule (for messages and docs) and default. */
export interface Setting<K extends keyof PlatformConfig> {
  key: K
  env: string
  parse: (raw: string) => PlatformConfig[K] | undefined
  rule: string
  fallback: PlatformConfig[K]
  /** The default under `--demo` (EARSHOT_DEMO=1), when it differs: a demo runs on one machine. */
  demoFallback?: PlatformConfig[K]
}

export const integer =
  (min: number, max: number) =>
  (raw: string): number | undefined => {
    if (!/^\d+$/.test(raw)) return undefined
    const value = Number(raw)
    return value >= min && value <= max ? value : undefined
  }
export const text = (raw: string) => (raw.length > 0 ? raw : undefined)
export const port = { parse: integer(0, 65_535), rule: 'an integer from 0 to 65535' }
export const seconds = (min: number) => ({
  parse: integer(min, 10 * 365 * 86_400),
  rule: `a whole number of seconds ≥ ${min}`,
})
export const decimalSeconds =
  (min: number, max: number) =>
  (raw: string): number | undefined => {
    if (!/^\d+(\.\d{1,3})?$/.test(raw)) return undefined
    const value = Number(raw)
    return value >= min && value <= max ? value : undefined
  }
export const flag = (raw: string) =>
  raw === '1' || raw === 'true' ? true : raw === '0' || raw === 'false' ? false : undefined
/** 15s, 15s, 30s, 3m, 10m, 20m, 30m, 30m, 30m, 1h, 3h, 3h, 3h, 6h, 6h. */
export const DEFAULT_RETRY_SCHEDULE_SECONDS = [
  15, 15, 30, 180, 600, 1200, 1800, 1800, 1800, 3600, 10_800, 10_800, 10_800, 21_600, 21_600,
]
/** The audio an upload may be unless EARSHOT_MEDIA_AUDIO_TYPES says otherwise. */
export const DEFAULT_AUDIO_TYPES = [
  'audio/wav',
  'audio/x-wav',
  'audio/wave',
  'audio/mpeg',
  'audio/mp4',
  'audio/aac',
  'audio/ogg',
  'audio/opus',
  'audio/flac',
  'audio/webm',
]
const portNumber = integer(1, 65_535)
/** `443` or `1024-65535`. */
export const isPortOrRange = (part: string) => {
  const bounds = part.split('-').map(portNumber)
  const [from, to = from] = bounds
  return bounds.length <= 2 && from !== undefined && to !== undefined && from <= to
}
/** The well-known web ports and the unprivileged ones: not SMTP (25), SSH (22) or another service's. */
export const DEFAULT_PUSH_PORTS = ['80', '443', '1024-65535']
export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
