import { Option } from 'commander'
import { ROLE_NAMES } from '../access/roles.js'
import { enterpriseIdArgument } from './client-command.js'

/* The options the keys and operators commands share: a role, and the enterprises it is limited to. */

export interface JsonFlag {
  json?: boolean
}

export const roleOption = (description: string) =>
  new Option('--role <role>', `${description}: ${ROLE_NAMES.join(', ')}`).choices(ROLE_NAMES)

/** --enterprise, repeatable: the enterprises a key or an operator is limited to. */
export const enterprisesOption = (description: string) =>
  new Option('--enterprise <id>', `${description} (repeat it for several)`).argParser(
    (raw: string, previous: number[] | undefined) => [...(previous ?? []), enterpriseIdArgument(raw)],
  )

/** A key's or an operator's enterprises in words: those listed, or every one. */
export function scopeText(enterprises: readonly number[] | null): string {
  if (enterprises === null) return 'every enterprise'
  if (enterprises.length === 0) return 'no enterprise'
  return `${enterprises.length === 1 ? 'enterprise' : 'enterprises'} ${enterprises.join(', ')}`
}

/** The same, for a table's cell. */
export const scopeCell = (enterprises: readonly number[] | null) =>
  enterprises === null ? 'all' : enterprises.join(',') || 'none'
