/**
 * The operator guide's table of permissions, made from the code that decides them: each permission and
 * what it allows (http/permissions.ts), and which roles grant it (access/roles.ts). The table sits between
 * two markers in docs/operator-guide.md; the text around it is written by hand.
 *
 *   npm run docs:permissions                                   rewrites the table
 *   node packages/platform/dist/docs/permission-table.js --check exits 1 when the table is out of date
 *
 * A test (src/docs/docs-as-written.test.ts) fails when the guide's table is not what this renders.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { grants, PLATFORM_WIDE, ROLE_NAMES } from '../access/roles.js'
import { type Permission, permissions } from '../http/permissions.js'

export const BEGIN_MARKER =
  '<!-- BEGIN GENERATED: the permissions of roles.ts and permissions.ts (npm run docs:permissions) -->'
export const END_MARKER = '<!-- END GENERATED -->'

/** The document the table is written into. */
export const PERMISSIONS_DOCUMENT = new URL('../../../../docs/operator-guide.md', import.meta.url)

/** The markdown table: a row per permission, a column per role, ✓ where the role grants it. */
export function permissionTable(): string {
  const names = Object.keys(permissions) as Permission[]
  return [
    `| permission | what it allows | ${ROLE_NAMES.join(' | ')} |`,
    `|---|---|${ROLE_NAMES.map(() => ':---:|').join('')}`,
    ...names.map(
      (permission) =>
        `| \`${permission}\` | ${cell(permissions[permission])} | ` +
        `${ROLE_NAMES.map((role) => (grants(role, permission) ? '✓' : ' ')).join(' | ')} |`,
    ),
    '',
    `A role limited to some enterprises never holds the permissions over the whole platform, whatever the role: ${PLATFORM_WIDE.map((permission) => `\`${permission}\``).join(', ')} (it would see the other enterprises' figures, or make itself a wider key).`,
  ].join('\n')
}

/** The document with the table between its markers replaced by the current one. */
export function withCurrentPermissions(document: string, table: string = permissionTable()): string {
  const begin = document.indexOf(BEGIN_MARKER)
  const end = begin < 0 ? -1 : document.indexOf(END_MARKER, begin)
  if (begin < 0 || end < 0) {
    throw new Error(`docs/operator-guide.md must hold the lines\n${BEGIN_MARKER}\n${END_MARKER}`)
  }
  return `${document.slice(0, begin + BEGIN_MARKER.length)}\n${table}\n${document.slice(end)}`
}

function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ')
}

/** `node permission-table.js [--check]`: rewrites the guide's table, or checks that it is current. */
function main(args: string[]): void {
  const path = fileURLToPath(PERMISSIONS_DOCUMENT)
  const document = readFileSync(path, 'utf8')
  const current = withCurrentPermissions(document)
  if (args.includes('--check')) {
    if (current !== document) {
      process.stderr.write(`${path} is out of date with roles.ts: run npm run docs:permissions\n`)
      process.exitCode = 1
    }
    return
  }
  if (current !== document) writeFileSync(path, current)
  process.stdout.write(
    `${path}: ${current === document ? 'already current' : 'permission table rewritten'}\n`,
  )
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1]))
  main(process.argv.slice(2))
