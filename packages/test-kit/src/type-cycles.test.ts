import assert from 'node:assert/strict'
import { rm } from 'node:fs/promises'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { runCli } from './run-cli.js'
import { scratchTree } from './scratch-tree.js'

/**
 * scripts/check-type-cycles.mjs, run by `npm run lint`, on trees of its own: a cycle made only of
 * `import type` between two folders fails it, naming them; the same imports one way pass.
 */

const script = fileURLToPath(new URL('../../../scripts/check-type-cycles.mjs', import.meta.url))

const tree = (files: Record<string, string>) => scratchTree('earshot-type-cycles-', files)

test('a cycle of type imports between folders fails the check; one way passes', {
  timeout: 60_000,
}, async () => {
  const cyclic = await tree({
    'packages/a/src/x/one.ts': "import type { U } from '../y/two.js'\nexport type T = U\n",
    'packages/a/src/y/two.ts': "import type { T } from '../x/one.js'\nexport type U = string | T[]\n",
  })
  const oneWay = await tree({
    'packages/a/src/x/one.ts': "import type { U } from '../y/two.js'\nexport type T = U\n",
    'packages/a/src/y/two.ts': 'export type U = string\n',
  })
  try {
    const failed = await runCli(script, [cyclic], {})
    assert.equal(failed.code, 1, failed.stdout)
    assert.match(failed.stderr, /no-circular-folders: packages\/a\/src\/(x|y) →/)
    const passed = await runCli(script, [oneWay], {})
    assert.equal(passed.code, 0, passed.stderr)
    assert.match(passed.stdout, /^check-type-cycles: 2 sources/)
  } finally {
    await rm(cyclic, { recursive: true, force: true })
    await rm(oneWay, { recursive: true, force: true })
  }
})
