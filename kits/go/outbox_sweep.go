package earshot

import (
	"database/sql"
	"strconv"
	"time"
)

// loop claims the callbacks due, at every poll and whenever poked, and prunes expired nonces.
func (o *Outbox) loop() {
	defer close(o.loopDone)
	poll := time.NewTicker(o.cfg.PollInterval)
	defer poll.Stop()
	lastPrune := time.Time{}
	for {
		if time.Since(lastPrune) >= pruneInterval {
			o.pruneNonces()
			lastPrune = time.Now()
		}
		o.claimDue()
		select {
		case <-o.ctx.Done():
			return
		case <-poll.C:
		case <-o.poke:
		}
	}
}

// claimDue claims as many due callbacks as there are free slots, and starts them.
func (o *Outbox) claimDue() {
	free := cap(o.slots) - len(o.slots)
	if free <= 0 {
		return
	}
	now := millis(time.Now())
	rows, err := o.db.QueryContext(o.ctx, o.sql(`SELECT event_id, audio_id, claim_no, rearms, failures, erased FROM `+callbacksTable+`
		WHERE state IN ('pending', 'sending') AND due_at <= ? ORDER BY due_at LIMIT `+strconv.Itoa(free)), now)
	if err != nil {
		o.logUnlessClosing("looking for due receipt callbacks", err)
		return
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		o.logUnlessClosing("looking for due receipt callbacks", err)
		return
	}
	for _, job := range jobs {
		o.claim(job, `state IN ('pending', 'sending') AND due_at <= ?`, now)
	}
}

// claimPending claims eventID's callback if it is pending, due or not: its push was just answered.
func (o *Outbox) claimPending(eventID string) {
	rows, err := o.db.QueryContext(o.ctx, o.sql(`SELECT event_id, audio_id, claim_no, rearms, failures, erased FROM `+callbacksTable+`
		WHERE event_id = ? AND state = 'pending'`), eventID)
	if err != nil {
		o.logUnlessClosing("claiming a receipt callback", err)
		return
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		o.logUnlessClosing("claiming a receipt callback", err)
		return
	}
	for _, job := range jobs {
		o.claim(job, `state = 'pending'`)
	}
}

// claim takes a callback as read, unless it changed since, and starts sending it.
func (o *Outbox) claim(job callbackJob, condition string, args ...interface{}) {
	o.mu.Lock()
	if _, busy := o.sending[job.eventID]; busy || o.closed {
		o.mu.Unlock()
		return
	}
	o.sending[job.eventID] = false
	o.wg.Add(1)
	o.mu.Unlock()
	params := append([]interface{}{o.claimant, millis(time.Now().Add(o.lease())), job.eventID, job.claimNo, job.rearms}, args...)
	n, err := o.exec(o.ctx, `UPDATE `+callbacksTable+` SET state = 'sending', claimed_by = ?, claim_no = claim_no + 1,
		due_at = ? WHERE event_id = ? AND claim_no = ? AND rearms = ? AND `+condition, params...)
	if err != nil || n != 1 {
		if err != nil {
			o.logUnlessClosing("claiming a receipt callback", err)
		}
		o.finished(job.eventID)
		o.wg.Done()
		return
	}
	job.claimNo++
	go o.run(job, false)
}

func scanJobs(rows *sql.Rows) ([]callbackJob, error) {
	defer rows.Close()
	var jobs []callbackJob
	for rows.Next() {
		var job callbackJob
		var erased int
		if err := rows.Scan(&job.eventID, &job.audioID, &job.claimNo, &job.rearms, &job.failures, &erased); err != nil {
			return nil, err
		}
		job.erased = erased != 0
		jobs = append(jobs, job)
	}
	return jobs, rows.Err()
}

func (o *Outbox) pruneNonces() {
	_, err := o.exec(o.ctx, `DELETE FROM `+noncesTable+` WHERE expires_at <= ?`, millis(time.Now()))
	o.logUnlessClosing("forgetting expired nonces", err)
}

func (o *Outbox) logUnlessClosing(what string, err error) {
	if err != nil && o.ctx.Err() == nil {
		o.cfg.Logf("earshot: %s: %v", what, err)
	}
}
