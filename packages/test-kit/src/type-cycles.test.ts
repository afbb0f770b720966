import assert from 'node:assert/strict'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { runCli } from './run-cli.js'

/**
 * scripts/check-type-cycles.mjs, run by `npm run lint`, on trees of its own: a cycle made only of
 * `import type` between two folders fails it, naming them; the same imports one way pass.
 */

const script = fileURLToPath(new URL('../../../scripts/check-type-cycles.mjs', import.meta.url))

async function tree(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'earshot-type-cycles-'))
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true })
    await writeFile(join(root, path), text)
  }
  return root
}

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
