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
import { grants, PLATFORM_WIDE, ROLE_NAMES } from '../access/roles.js'
import { cell, runWhenMain, withSection } from '../config/generated-section.js'
import { type Permission, permissions } from '../http/permissions.js'

export const BEGIN_MARKER =
  '<!-- BEGIN GENERATED: the permissions of roles.ts and permissions.ts (npm run docs:permissions) -->'

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
  return withSection(document, BEGIN_MARKER, table, 'docs/operator-guide.md')
}

runWhenMain(import.meta.url, PERMISSIONS_DOCUMENT, withCurrentPermissions, 'npm run docs:permissions')
