import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

/*
 * The portal's modules export only what another module uses: a name used in its own file alone is the
 * module's own. Read from the TypeScript (tests run from dist/), every package's sources and the pages.
 */

const platform = fileURLToPath(new URL('../../', import.meta.url))
const packages = join(platform, '..')

/** The TypeScript of a folder and those below it (no build output, no dependencies). */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return ['dist', 'node_modules'].includes(entry.name) ? [] : sources(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

test('every value a portal module exports is used by another module', { timeout: 30_000 }, () => {
  const everywhere = readdirSync(packages).flatMap((name) => sources(join(packages, name)))
  const texts = new Map(everywhere.map((path) => [path, readFileSync(path, 'utf8')]))
  const portal = join(platform, 'src', 'portal')
  const shipped = readdirSync(portal).filter(
    (name) => name.endsWith('.ts') && !/\.test(\.support)?\.ts$/.test(name),
  )
  const unused: string[] = []
  for (const name of shipped) {
    const own = join(portal, name)
    const exported = (texts.get(own) ?? '').matchAll(/^export (?:async )?(?:function|const|class) (\w+)/gm)
    for (const [, value] of exported) {
      const word = new RegExp(`\\b${value}\\b`)
      const users = [...texts].filter(([path, text]) => path !== own && word.test(text))
      if (users.length === 0) unused.push(`${name}: ${value}`)
    }
  }
  assert.deepEqual(unused, [], 'exported, yet used in their own file alone')
})
