import { setTimeout as delay } from 'node:timers/promises'
import type { Queryable } from '../storage/database.js'

/*
 * The receipt callbacks of a receiver check's pushes (sql/000019.sql), recorded apart from real receipts.
 * The check and the callback may run on different instances, so they meet in the database: the check
 * registers its audioIds and marks each push answered; a callback for one of them waits for that mark
 * (at most the time given) before it is recorded, so "called back before answering" is told apart from
 * "called back right after" without comparing two instances' clocks.
 */

/**
 * A check's rows outlive it by an hour, so that a callback arriving after the check ended (a receiver's
 * outbox calling back again for a repeated push) is still answered 2000; the next check removes them.
 */
const KEPT_FOR = "interval '1 hour'"
const POLL_MS = 50

export async function registerCheck(db: Queryable, enterpriseId: number, audioIds: string[]): Promise<void> {
  await db.query(`DELETE FROM receiver_checks WHERE created_at < now() - ${KEPT_FOR}`)
  await db.query(
    'INSERT INTO receiver_checks (audio_id, enterprise_id) SELECT unnest($2::text[]), $1::bigint',
    [enterpriseId, audioIds],
  )
}

/** The check received the answer to this audioId's push. */
export async function markAnswered(db: Queryable, audioId: string): Promise<void> {
  await db.query(
    'UPDATE receiver_checks SET answered_at = clock_timestamp() WHERE audio_id = $1 AND answered_at IS NULL',
    [audioId],
  )
}

export interface CheckCallback {
  audioId: string
  calledBack: boolean
  /** It arrived while its push was still unanswered (it waited for the answer in vain). */
  beforeAnswer: boolean
  /** From the answer to the callback, when both happened. */
  afterAnswerMs: number | null
}

export async function checkCallbacks(db: Queryable, audioIds: string[]): Promise<Map<string, CheckCallback>> {
  const rows = await db.query<{
    audio_id: string
    called_back: boolean
    before_answer: boolean | null
    after_answer_ms: number | null
  }>(
    `SELECT audio_id, called_back_at IS NOT NULL AS called_back, before_answer,
            (extract(epoch FROM called_back_at - answered_at) * 1000)::float8 AS after_answer_ms
       FROM receiver_checks WHERE audio_id = ANY($1::text[])`,
    [audioIds],
  )
  return new Map(
    rows.map((row) => [
      row.audio_id,
      {
        audioId: row.audio_id,
        calledBack: row.called_back,
        beforeAnswer: row.before_answer === true,
        afterAnswerMs: row.after_answer_ms,
      },
    ]),
  )
}

/**
 * A partner's callback for an audioId a running check pushed to its enterprise: recorded once its push's
 * answer is (or `waitMs` have passed), never as a receipt. False when no check pushed that audioId.
 */
export async function recordCheckCallback(
  db: Queryable,
  enterpriseId: number,
  audioId: string,
  waitMs: number,
): Promise<boolean> {
  const deadline = performance.now() + waitMs
  for (;;) {
    const [row] = await db.query<{ answered: boolean }>(
      'SELECT answered_at IS NOT NULL AS answered FROM receiver_checks WHERE audio_id = $1 AND enterprise_id = $2',
      [audioId, enterpriseId],
    )
    if (!row) return false
    if (row.answered || performance.now() >= deadline) break
    await delay(POLL_MS)
  }
  await db.query(
    `UPDATE receiver_checks SET called_back_at = clock_timestamp(), before_answer = answered_at IS NULL
      WHERE audio_id = $1 AND called_back_at IS NULL`,
    [audioId],
  )
  return true
}
