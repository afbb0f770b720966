import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { describe, test } from 'node:test'
import { startTestPlatform, testBackends } from '@earshot/test-kit/backends'
import { adminCall, createPartner, ingest } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import { callbackSender, startTestReceiver } from '@earshot/test-kit/test-receiver'
import { listDeliveries } from '../deliveries/delivery-views.js'

const bin = new URL('../../bin/earshot.js', import.meta.url).pathname

if (testBackends.includes('postgres')) {
  describe('postgres: earshot worker', { timeout: 120_000 }, () => {
    test('pushes for a platform that does not dispatch, and stops cleanly on SIGTERM', async () => {
      const platform = await startTestPlatform('postgres', { pushDispatch: false })
      const partner = await createPartner(platform)
      const callback = callbackSender(() => platform.partnerUrl, partner)
      const receiver = await startTestReceiver(partner.secret, {
        afterAnswer: (push) => void callback(push.event.audioId),
      })
      const worker = spawn(process.execPath, [bin, 'worker'], {
        env: {
          PATH: process.env.PATH ?? '',
          DATABASE_URL: platform.context.config.databaseUrl ?? '',
          EARSHOT_PUSH_ALLOW_PRIVATE: '1',
          EARSHOT_LOG_LEVEL: 'warn',
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      })
      try {
        await once(worker.stdout, 'data')
        await adminCall(platform, 'setPushUrl', {
          params: { enterpriseId: partner.enterpriseId },
          body: { pushUrl: receiver.url },
        })
        const audioId = await ingest(platform, partner.enterpriseId, {
          deviceUid: 'DEV-W',
          title: 'pushed by a worker',
          recordedAt: '2026-05-01T08:00:00Z',
          denoiseUrl: 'https://media.example/w.mp3',
          recordDuration: 5000,
        })
        const [delivery] = await eventually(
          async () => {
            const list = await listDeliveries(platform.context.db, { audioId, limit: 1 })
            return list[0]?.state === 'confirmed' && list
          },
          15_000,
          'confirmed through the worker',
        )
        assert.equal(receiver.received[0]?.event.eventId, delivery?.eventId)
        worker.kill('SIGTERM')
        const [code] = await once(worker, 'exit')
        assert.equal(code, 0)
      } finally {
        worker.kill('SIGKILL')
        await receiver.close()
        await platform.stop()
      }
    })
  })
}
