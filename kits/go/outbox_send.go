package earshot

import (
	"context"
	"errors"
	"fmt"
	mathrand "math/rand"
	"time"
)

// wake is called once the answer to a push of eventID was written: its callback may go now.
func (o *Outbox) wake(eventID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	held, isHeld := o.held[eventID]
	delete(o.held, eventID)
	if _, busy := o.sending[eventID]; busy {
		o.sending[eventID] = true
		return
	}
	o.wg.Add(1)
	if isHeld && time.Since(held.at) < o.cfg.AnswerGrace {
		o.sending[eventID] = false
		go o.run(held.job, true)
		return
	}
	go func() {
		defer o.wg.Done()
		o.claimPending(eventID)
	}()
}

// run sends a claimed callback once a slot is free. The caller counted it in o.wg.
func (o *Outbox) run(job callbackJob, renew bool) {
	defer o.wg.Done()
	select {
	case o.slots <- struct{}{}:
	case <-o.ctx.Done():
		o.finished(job.eventID)
		return
	}
	defer func() { <-o.slots }()
	o.send(job, renew)
}

// send makes one attempt and records its result under the claim.
func (o *Outbox) send(job callbackJob, renew bool) {
	if renew && !o.renew(job) {
		o.finished(job.eventID)
		return
	}
	confirm := o.cfg.Confirm
	if job.erased {
		confirm = o.cfg.ConfirmErasure
	}
	ctx, cancel := context.WithTimeout(o.ctx, o.cfg.AttemptTimeout)
	err := callWithin(ctx, confirm, job.audioID)
	cancel()
	o.settle(job, err)
	if o.finished(job.eventID) {
		o.claimPending(job.eventID)
	}
}

// renew extends a held claim's lease over the attempt it starts; false when the claim was lost.
func (o *Outbox) renew(job callbackJob) bool {
	ctx, cancel := context.WithTimeout(context.Background(), o.cfg.AttemptTimeout)
	defer cancel()
	n, err := o.exec(ctx, `UPDATE `+callbacksTable+` SET due_at = ? WHERE event_id = ? AND claim_no = ? AND state = 'sending'`,
		millis(time.Now().Add(o.lease())), job.eventID, job.claimNo)
	if err != nil {
		o.cfg.Logf("earshot: receipt callback of %s: %v (it goes out when its claim ends)", job.audioID, err)
	}
	return err == nil && n == 1
}

// lease is how long a claim lasts: its attempt, and a margin for recording its result (and for
// clocks that differ: a claim taken over too early only makes a callback twice, which is harmless).
func (o *Outbox) lease() time.Duration {
	margin := leaseMargin
	if o.cfg.AttemptTimeout < margin {
		margin = o.cfg.AttemptTimeout
	}
	return o.cfg.AttemptTimeout + margin
}

// finished forgets a callback sent from here; true when its push was answered again meanwhile.
func (o *Outbox) finished(eventID string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	again := o.sending[eventID]
	delete(o.sending, eventID)
	return again && !o.closed
}

// callWithin returns when confirm does or ctx ends, whichever comes first.
func callWithin(ctx context.Context, confirm func(context.Context, string) error, audioID string) error {
	done := make(chan error, 1)
	go func() { done <- confirm(ctx, audioID) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no answer within the attempt's time: %w", ctx.Err())
	}
}

// settle records an attempt's result under its claim: confirmed, failed for good, or due again.
// A push repeated during the attempt leaves the callback pending: it goes out again.
func (o *Outbox) settle(job callbackJob, sendErr error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.cfg.AttemptTimeout)
	defer cancel()
	now := time.Now()
	state, dueAt, failures, lastError := CallbackConfirmed, interface{}(nil), 0, interface{}(nil)
	doneAt := interface{}(millis(now))
	switch {
	case sendErr == nil:
	case permanentRefusal(sendErr):
		state, failures, lastError = CallbackFailed, job.failures+1, sendErr.Error()
		o.cfg.Logf("earshot: %s of %s refused for good: %v", job.what(), job.audioID, sendErr)
	default:
		delay := o.retryDelay(job.failures)
		state, dueAt, failures, lastError, doneAt = CallbackPending, millis(now.Add(delay)), job.failures+1, sendErr.Error(), nil
		o.cfg.Logf("earshot: %s of %s failed, retrying in %v: %v", job.what(), job.audioID, delay.Round(time.Millisecond), sendErr)
	}
	n, err := o.exec(ctx, `UPDATE `+callbacksTable+` SET state = ?, due_at = ?, claimed_by = NULL, failures = ?,
		attempts = attempts + 1, last_error = ?, done_at = ? WHERE event_id = ? AND claim_no = ? AND rearms = ?`,
		state, dueAt, failures, lastError, doneAt, job.eventID, job.claimNo, job.rearms)
	if err == nil && n == 0 {
		_, err = o.exec(ctx, `UPDATE `+callbacksTable+` SET state = 'pending', due_at = ?, claimed_by = NULL,
			failures = 0, attempts = attempts + 1, last_error = ? WHERE event_id = ? AND claim_no = ?`,
			millis(now.Add(o.cfg.AnswerGrace)), lastError, job.eventID, job.claimNo)
	}
	if err != nil {
		o.cfg.Logf("earshot: recording the receipt callback of %s: %v (it goes out again when its claim ends)", job.audioID, err)
	}
}

// permanentRefusal: a refusal no later attempt can turn into 2000 (unknown audioId, wrong key,
// disabled enterprise…); token refusals, replays and rate limits are not.
func permanentRefusal(err error) bool {
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Code < 4000 || apiErr.Code >= 5000 {
		return false
	}
	switch apiErr.Code {
	case CodeUnauthorized, CodeTokenExpired, CodeReplayed, CodeRateLimited, CodeRequestTimeout:
		return false
	}
	return true
}

func (o *Outbox) retryDelay(failures int) time.Duration {
	schedule := o.cfg.RetrySchedule
	if failures >= len(schedule) {
		failures = len(schedule) - 1
	}
	d := float64(schedule[failures])
	return time.Duration(d * (0.9 + 0.2*mathrand.Float64()))
}

func (job callbackJob) what() string {
	if job.erased {
		return "erasure confirmation"
	}
	return "receipt callback"
}
