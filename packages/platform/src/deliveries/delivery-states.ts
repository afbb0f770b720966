import { defineQueueMachine } from '@earshot/support/queue'

/** Re-pushes of an acknowledged delivery whose callback does not come, before it is `unconfirmed`. */
export const MAX_REPUSHES = 3

/**
 * A delivery's states and every transition between them. The dispatcher,
 * the receipt callback and operators' replays move deliveries only along these; migration 3 installs a
 * trigger generated from this table that refuses any other UPDATE of `state` (a change here needs a new
 * migration re-creating it with transitionGuardSql).
 *
 * `acked` waits for the callback until its due_at (the confirm window); the queue's sweep then moves it
 * on (deliveryQueue's timer). "Acknowledged" below means the delivery has an ack recorded (acks > 0).
 */
export const deliveryMachine = defineQueueMachine({
  ready: 'pending',
  claimed: 'in_flight',
  // A disabled push URL's deliveries, out of the due path until it is enabled (push-url-health.ts).
  held: 'held',
  waiting: ['acked'],
  // Behind an earlier event of its recording to the same endpoint that is not done yet (sql/000020.sql
  // makes it pending when that one is).
  parked: ['queued'],
  final: ['confirmed', 'failed', 'unconfirmed', 'cancelled'],
  transitions: [
    { from: 'pending', to: 'in_flight', on: 'claim' }, // by a dispatcher; the claim number grows by one
    // The attempt's result, recorded under the current claim:
    { from: 'in_flight', to: 'confirmed', on: 'ack' }, // and a receipt came at or after the claim
    { from: 'in_flight', to: 'acked', on: 'ack' }, // otherwise: due after the confirm window
    { from: 'in_flight', to: 'pending', on: 'failure' }, // retry schedule not exhausted
    { from: 'in_flight', to: 'failed', on: 'failure' }, // schedule exhausted
    { from: 'in_flight', to: 'pending', on: 'release' }, // lease over, or handed back at shutdown
    // The confirm window's end:
    { from: 'acked', to: 'pending', on: 'window' }, // a re-push, same eventId
    { from: 'acked', to: 'unconfirmed', on: 'window' }, // after MAX_REPUSHES re-pushes
    // A receipt callback confirms what the partner acknowledged; a re-push in flight then
    // moves nothing. `unconfirmed` is acknowledged too: a late callback still confirms it.
    { from: 'acked', to: 'confirmed', on: 'receipt' },
    { from: 'pending', to: 'confirmed', on: 'receipt' }, // acknowledged before, waiting for a re-push
    { from: 'in_flight', to: 'confirmed', on: 'receipt' }, // acknowledged before, being re-pushed
    { from: 'unconfirmed', to: 'confirmed', on: 'receipt' },
    { from: 'held', to: 'confirmed', on: 'receipt' }, // acknowledged before, its re-push held
    // A disabled push URL: its pending deliveries are held, and come back when it is
    // enabled, with those that went failed since it began failing.
    { from: 'pending', to: 'held', on: 'hold' },
    { from: 'held', to: 'pending', on: 'resume' },
    { from: 'failed', to: 'pending', on: 'enable' },
    // A failing push URL's first acknowledged push: those that went failed since it began failing.
    { from: 'failed', to: 'pending', on: 'recover' },
    // The earlier events of its recording are done (or the sweep finds nothing of them open).
    { from: 'queued', to: 'pending', on: 'turn' },
    { from: 'failed', to: 'pending', on: 'replay' }, // by an operator
    { from: 'unconfirmed', to: 'pending', on: 'replay' },
    // One delivery replayed by an operator while it waits for an earlier event of its recording: pushed
    // now, ahead of it (not by a range replay).
    { from: 'queued', to: 'pending', on: 'replay' },
    // An operator's replay of what the partner never receipted, acknowledged or not (`deliveries replay
    // --unreceipted-since`); a plain `replay` still takes failed and unconfirmed ones only.
    ...(['acked', 'failed', 'unconfirmed'] as const).map((from) => ({
      from,
      to: 'pending' as const,
      on: 'unreceipted_replay',
    })),
    // Recording deleted, or its endpoint removed; or one delivery cancelled by an operator:
    ...(['pending', 'held', 'queued', 'in_flight', 'acked', 'failed', 'unconfirmed'] as const).flatMap(
      (from) => [
        { from, to: 'cancelled' as const, on: 'deletion' },
        { from, to: 'cancelled' as const, on: 'cancel' },
      ],
    ),
  ],
})

export type DeliveryState = (typeof deliveryMachine.states)[number]
export const DELIVERY_STATES: readonly DeliveryState[] = deliveryMachine.states

/** The states an operator may replay one delivery from. */
export const REPLAYABLE_STATES: readonly DeliveryState[] = deliveryMachine.sources('replay')

/** The states a range replay takes: not queued ones, which would overtake their recording's earlier events. */
export const RANGE_REPLAYABLE_STATES: readonly DeliveryState[] = REPLAYABLE_STATES.filter(
  (state) => !deliveryMachine.parked.includes(state),
)

/** The states a receipt callback confirms an acknowledged delivery from. */
export const RECEIPT_STATES: readonly DeliveryState[] = deliveryMachine.sources('receipt', 'confirmed')

/** The states a recording's deletion (or its endpoint's removal) cancels a delivery from: any but confirmed. */
export const CANCELLABLE_STATES: readonly DeliveryState[] = deliveryMachine.sources('deletion')
