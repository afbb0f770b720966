import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { loadKey } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { closedPort, runCli, spawnCli } from '@earshot/test-kit/run-cli'
import { configEnvironment } from '../config/config.js'

const cli = fileURLToPath(new URL('../../bin/earshot.js', import.meta.url))
const firstQuery = fileURLToPath(new URL('../../../../examples/first-query.mjs', import.meta.url))

function recording(i: number): Record<string, unknown> {
  return {
    deviceUid: `DEV-${i % 3}`,
    title: `Recording ${i}`,
    recordedAt: '2026-01-02T03:04:05.000Z',
    denoiseUrl: `https://media.example/${i}.mp3`,
    recordDuration: 1000 + i,
  }
}

// The two suites run side by side: starting a fresh on-disk database for `serve` takes seconds.
describe('earshot', { concurrency: true, timeout: 180_000 }, () => {
  describe('earshot CLI against a running platform', { concurrency: false }, () => {
    let platform: TestPlatform
    let dir: string
    let env: Record<string, string>
    const earshot = (...args: string[]) => runCli(cli, args, env)

    async function count(enterpriseId: number): Promise<number> {
      const [row] = await platform.context.db.query<{ n: number | string }>(
        'SELECT count(*) AS n FROM recordings WHERE enterprise_id = $1',
        [enterpriseId],
      )
      return Number(row?.n)
    }

    async function createEnterprise(name: string): Promise<number> {
      const result = await earshot('enterprise', 'create', '--name', name, '--json')
      assert.equal(result.code, 0, result.stderr)
      return JSON.parse(result.stdout).enterpriseId
    }

    before(async () => {
      platform = await startTestPlatform('pglite')
      dir = await mkdtemp(join(tmpdir(), 'earshot-cli-'))
      env = { EARSHOT_URL: platform.adminUrl, EARSHOT_ADMIN_TOKEN: platform.adminToken }
    })

    after(async () => {
      await platform.stop()
      await rm(dir, { recursive: true, force: true })
    })

    test('enterprise create --json prints exactly enterpriseId, keyVersion and secret', async () => {
      const result = await earshot('enterprise', 'create', '--name', 'Acme', '--json')
      assert.equal(result.code, 0, result.stderr)
      assert.equal(result.stderr, '')
      assert.equal(result.stdout.split('\n').filter(Boolean).length, 1, 'one line on stdout')
      const created = JSON.parse(result.stdout)
      assert.deepEqual(Object.keys(created), ['enterpriseId', 'keyVersion', 'secret'])
      assert.ok(Number.isSafeInteger(created.enterpriseId) && created.enterpriseId > 0)
      assert.equal(created.keyVersion, 1)
      assert.match(created.secret, /^[A-Za-z0-9+/]{43}=$/)
      assert.doesNotThrow(() => loadKey(created.secret))
    })

    test('enterprise create without --json is readable and warns the secret is shown once', async () => {
      const result = await earshot(
        'enterprise',
        'create',
        '--name',
        'Readable Co',
        '--push-url',
        'https://localhost/p',
      )
      assert.equal(result.code, 0, result.stderr)
      assert.match(result.stdout, /secret: +[A-Za-z0-9+/]{43}=/)
      assert.match(result.stdout, /only this once/)
    })

    test('enterprise list --json gives the enterprises array; the readable form is a table', async () => {
      const id = await createEnterprise('Listed Ltd')
      const json = await earshot('enterprise', 'list', '--json')
      assert.equal(json.code, 0, json.stderr)
      const enterprises = JSON.parse(json.stdout)
      assert.ok(Array.isArray(enterprises))
      const listed = enterprises.find((each: { enterpriseId: number }) => each.enterpriseId === id)
      assert.equal(listed?.name, 'Listed Ltd')
      assert.equal(listed?.disabled, false)
      assert.equal(listed?.requireIssuedAt, false)
      assert.deepEqual(
        listed?.keys.map((key: { keyVersion: number }) => key.keyVersion),
        [1],
      )

      const table = await earshot('enterprise', 'list')
      assert.equal(table.code, 0, table.stderr)
      assert.match(table.stdout, /^ID +NAME +STATUS +KEY +ISSUED AT +PUSH URL$/m)
      assert.match(table.stdout, new RegExp(`^${id} +Listed Ltd +active +1 +optional +-$`, 'm'))
      assert.match(table.stdout, /Readable Co +active +1 +optional +https:\/\/localhost\/p/)
    })

    test('enterprise disable marks the enterprise disabled; an unknown one is refused with 4040', async () => {
      const id = await createEnterprise('Soon Disabled')
      const result = await earshot('enterprise', 'disable', String(id), '--json')
      assert.equal(result.code, 0, result.stderr)
      assert.deepEqual(JSON.parse(result.stdout), { enterpriseId: id, disabled: true })
      const [row] = await platform.context.db.query<{ disabled: boolean }>(
        'SELECT disabled_at IS NOT NULL AS disabled FROM enterprises WHERE enterprise_id = $1',
        [id],
      )
      assert.equal(row?.disabled, true)

      const missing = await earshot('enterprise', 'disable', '999999', '--json')
      assert.equal(missing.code, 1)
      assert.match(missing.stderr, /^error 4040: /)
      assert.equal(JSON.parse(missing.stdout).error.code, 4040)
    })

    test('enterprise update --require-issued-at sets the flag list shows; a wrong value or none is refused', async () => {
      const id = await createEnterprise('Strict Ltd')
      const set = await earshot('enterprise', 'update', String(id), '--require-issued-at', 'true', '--json')
      assert.equal(set.code, 0, set.stderr)
      const updated = JSON.parse(set.stdout)
      assert.equal(updated.enterpriseId, id)
      assert.equal(updated.requireIssuedAt, true)
      const listed = JSON.parse((await earshot('enterprise', 'list', '--json')).stdout).find(
        (each: { enterpriseId: number }) => each.enterpriseId === id,
      )
      assert.equal(listed?.requireIssuedAt, true)

      const cleared = await earshot('enterprise', 'update', String(id), '--require-issued-at', 'false')
      assert.equal(cleared.code, 0, cleared.stderr)
      assert.equal(cleared.stdout, `Enterprise ${id} accepts sealed requests without issuedAt.\n`)

      const wrong = await earshot('enterprise', 'update', String(id), '--require-issued-at', 'yes')
      assert.equal(wrong.code, 1)
      assert.match(wrong.stderr, /--require-issued-at.*true or false/)
      const nothing = await earshot('enterprise', 'update', String(id))
      assert.equal(nothing.code, 1)
      assert.match(nothing.stderr, /--require-issued-at/)
      const missing = await earshot('enterprise', 'update', '999999', '--require-issued-at', 'true', '--json')
      assert.equal(missing.code, 1)
      assert.equal(JSON.parse(missing.stdout).error.code, 4040)
    })

    test('enterprise rotate-key --json gives keyVersion 2 and a new secret', async () => {
      const id = await createEnterprise('Rotating')
      const result = await earshot('enterprise', 'rotate-key', String(id), '--json')
      assert.equal(result.code, 0, result.stderr)
      const rotated = JSON.parse(result.stdout)
      assert.equal(rotated.enterpriseId, id)
      assert.equal(rotated.keyVersion, 2)
      assert.equal(rotated.previousKeyVersion, 1)
      assert.match(rotated.secret, /^[A-Za-z0-9+/]{43}=$/)
      assert.ok(!Number.isNaN(Date.parse(rotated.previousKeyRetiresAt)))
    })

    test('enterprise set-push-url sets and --clear removes the push URL', async () => {
      const id = await createEnterprise('Pushed')
      const set = await earshot('enterprise', 'set-push-url', String(id), 'https://localhost/push', '--json')
      assert.equal(set.code, 0, set.stderr)
      assert.deepEqual(JSON.parse(set.stdout), {
        enterpriseId: id,
        pushUrl: 'https://localhost/push',
        cancelled: 0,
      })

      const cleared = await earshot('enterprise', 'set-push-url', String(id), '--clear', '--json')
      assert.equal(cleared.code, 0, cleared.stderr)
      assert.deepEqual(JSON.parse(cleared.stdout), { enterpriseId: id, pushUrl: null, cancelled: 0 })

      const neither = await earshot('enterprise', 'set-push-url', String(id))
      assert.equal(neither.code, 1)
      assert.match(neither.stderr, /--clear/)
    })

    test('recordings import --json acknowledges {"imported": N, "skipped": 0}; run again, it skips them all', async () => {
      const id = await createEnterprise('Importer')
      const file = join(dir, 'good.jsonl')
      const total = 1200 // more than one chunk, so several progress lines
      await writeFile(
        file,
        `${Array.from({ length: total }, (_, i) => JSON.stringify(recording(i))).join('\n')}\n`,
      )
      const result = await earshot('recordings', 'import', file, '--enterprise', String(id), '--json')
      assert.equal(result.code, 0, result.stderr)
      assert.equal(result.stdout, `{"imported": ${total}, "skipped": 0}\n`)
      assert.equal(await count(id), total)

      // The lines have no audioId: the ones derived from their content find them again.
      const readable = await earshot('recordings', 'import', file, '--enterprise', String(id))
      assert.equal(readable.code, 0, readable.stderr)
      assert.equal(
        readable.stdout,
        `Imported 0 recordings into enterprise ${id}; skipped ${total} already imported.\n`,
      )
      assert.equal(await count(id), total)
    })

    test('recordings import of the whole file after a part of it imports the rest', async () => {
      const id = await createEnterprise('Resumed')
      const lines = Array.from({ length: 10 }, (_, i) => JSON.stringify(recording(i)))
      const part = join(dir, 'part.jsonl')
      const whole = join(dir, 'whole.jsonl')
      await writeFile(part, lines.slice(0, 4).join('\n'))
      await writeFile(whole, lines.join('\n'))
      const first = await earshot('recordings', 'import', part, '--enterprise', String(id), '--json')
      assert.equal(first.stdout, '{"imported": 4, "skipped": 0}\n', first.stderr)
      const rest = await earshot('recordings', 'import', whole, '--enterprise', String(id), '--json')
      assert.equal(rest.code, 0, rest.stderr)
      assert.equal(rest.stdout, '{"imported": 6, "skipped": 4}\n')
      assert.equal(await count(id), 10)
    })

    test('recordings import with a bad line 3 names it, exits 1 and imports nothing', async () => {
      const id = await createEnterprise('Bad Import')
      const file = join(dir, 'bad.jsonl')
      const { deviceUid: _, ...noDevice } = recording(3)
      await writeFile(
        file,
        [recording(1), recording(2), noDevice, recording(4)].map((r) => JSON.stringify(r)).join('\n'),
      )
      const result = await earshot('recordings', 'import', file, '--enterprise', String(id), '--json')
      assert.equal(result.code, 1)
      // Each bad line on a line of its own; with --json the refusal is on stdout too.
      const msg =
        'nothing was imported; fix these lines and import the file again:\nline 3: deviceUid: is required'
      assert.equal(result.stderr, `error 4001: ${msg}\n`)
      assert.deepEqual(JSON.parse(result.stdout), { error: { code: 4001, msg } })
      assert.equal(await count(id), 0)
    })

    test('a missing import file is reported without calling the platform', async () => {
      const result = await earshot('recordings', 'import', join(dir, 'absent.jsonl'), '--enterprise', '1')
      assert.equal(result.code, 1)
      assert.match(result.stderr, /absent\.jsonl: no such file/)
    })

    test('a wrong admin token is refused with error 4010', async () => {
      const result = await runCli(cli, ['enterprise', 'list', '--json'], {
        ...env,
        EARSHOT_ADMIN_TOKEN: 'not-the-admin-token-at-all',
      })
      assert.equal(result.code, 1)
      assert.match(result.stderr, /^error 4010: /)
      assert.deepEqual(Object.keys(JSON.parse(result.stdout).error), ['code', 'msg'])
    })

    test('no credential at all tells the user to set EARSHOT_API_KEY (or the break-glass token)', async () => {
      const result = await runCli(cli, ['enterprise', 'list'], { EARSHOT_URL: platform.adminUrl })
      assert.equal(result.code, 1)
      assert.equal(result.stdout, '')
      assert.match(result.stderr, /set EARSHOT_API_KEY/)
      assert.match(result.stderr, /earshot keys create/)
      assert.match(result.stderr, /EARSHOT_ADMIN_TOKEN/)
    })

    test('an unreachable admin URL is named, with a hint that earshot serve is not running', async () => {
      const url = `http://127.0.0.1:${await closedPort()}`
      const result = await runCli(cli, ['enterprise', 'list'], { ...env, EARSHOT_URL: url })
      assert.equal(result.code, 1)
      assert.equal(result.stdout, '')
      assert.ok(result.stderr.includes(url), result.stderr)
      assert.match(result.stderr, /connection refused.*earshot serve/)
    })

    test('--help lists the commands; serve --help lists the environment variables', async () => {
      const help = await earshot('--help')
      assert.equal(help.code, 0)
      for (const command of [
        'serve',
        'enterprise',
        'recordings',
        'deliveries',
        'endpoints',
        'portal',
        'keys',
        'operators',
        'audit',
      ])
        assert.match(help.stdout, new RegExp(`^  ${command}`, 'm'))
      const serveHelp = await earshot('serve', '--help')
      assert.equal(serveHelp.code, 0)
      for (const { env: name } of configEnvironment) {
        assert.ok(serveHelp.stdout.includes(name), `serve --help names ${name}`)
      }
    })
  })

  describe('earshot serve', () => {
    test('an invalid EARSHOT_PORT exits with code 2 and names the variable', async () => {
      const result = await runCli(cli, ['serve'], { EARSHOT_PORT: 'abc', EARSHOT_DATA_DIR: 'memory://' })
      assert.equal(result.code, 2)
      assert.match(result.stderr, /EARSHOT_PORT must be an integer/)
      assert.equal(result.stdout, '')
    })

    test('--demo seeds a fresh database, saves its credentials, answers a first query and stops on SIGTERM', {
      timeout: 60_000,
    }, async () => {
      const dir = await mkdtemp(join(tmpdir(), 'earshot-serve-'))
      const child = spawnCli(
        cli,
        ['serve', '--demo', '--port', '0', '--admin-port', '0', '--data-dir', join(dir, 'data')],
        { EARSHOT_LOG_LEVEL: 'warn' },
      )
      const exited = new Promise<number | string | null>((resolve) =>
        child.on('exit', (code, signal) => resolve(code ?? signal)),
      )
      try {
        let stdout = ''
        let stderr = ''
        child.stderr.on('data', (chunk) => {
          stderr += chunk
        })
        const printed = await new Promise<string>((resolve, reject) => {
          child.stdout.on('data', (chunk) => {
            stdout += chunk
            if (/Press Ctrl\+C to stop\./.test(stdout)) resolve(stdout)
          })
          exited.then((code) => reject(new Error(`serve exited (${code}) early: ${stderr}`)))
        })
        // No break-glass token unless set: the first owner's setup link, then an API key, come last.
        assert.doesNotMatch(printed, /EARSHOT_ADMIN_TOKEN/)
        const secret = /secret: +(\S+)/.exec(printed)?.[1]
        const enterpriseId = /enterpriseId: +(\d+)/.exec(printed)?.[1]
        const partnerUrl = /Partner API: +(\S+)/.exec(printed)?.[1]
        const adminUrl = /Admin API: +(\S+)/.exec(printed)?.[1]
        assert.match(secret ?? '', /^[A-Za-z0-9+/]{43}=$/)
        assert.match(printed, new RegExp(`Console: +${adminUrl}/console/\n`))
        assert.match(printed, /Pushes may go to loopback and private addresses/)
        assert.match(
          printed,
          new RegExp(
            `set up the first owner .*\n.*\n {2}${adminUrl}/console/#setup=[\\w-]{20,}\n` +
              "Then create an API key for the CLI in the console's Keys screen, and in another shell:\n" +
              ' {2}export EARSHOT_API_KEY=<the key>\n {2}npx earshot enterprise list\n\nPress Ctrl\\+C to stop\\.\n$',
          ),
        )

        const file = join(dir, 'demo-credentials.json')
        assert.deepEqual(JSON.parse(await readFile(file, 'utf8')), {
          enterpriseId: Number(enterpriseId),
          keyVersion: 1,
          secret,
        })
        assert.equal((await stat(file)).mode & 0o777, 0o600)

        // The documented first query works against it.
        const query = await runCli(firstQuery, [], {
          EARSHOT_BASE_URL: partnerUrl as string,
          EARSHOT_ENTERPRISE_ID: enterpriseId as string,
          EARSHOT_SECRET: secret as string,
        })
        assert.equal(query.code, 0, query.stderr)
        assert.match(query.stdout, /^300 recordings in all; the first 5:/)
        assert.equal((query.stdout.match(/\((transcript|audio)\)$/gm) ?? []).length, 5)

        child.kill('SIGTERM')
        assert.equal(await exited, 0)
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
        await exited
        await rm(dir, { recursive: true, force: true })
      }
    })
  })
})
