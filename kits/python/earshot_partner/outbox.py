"""The receiver's durable store on sqlite3: accepted nonces, received events and their receipt callbacks.

Every acknowledged push gets its own callback, recorded ``held`` before the push is answered and held
until that answer went out (``release``); it is then ``pending`` and sent by the outbox's threads,
retried with backoff until the platform answers 2000. Everything is in one sqlite file, so a process
started on it after a crash or a kill sends what an earlier one left: a callback is never lost. A
deletion's callback is recorded once on_event removed the recording, and confirms its erasure
(``erased``).

Callback states: held -> pending -> in_flight -> confirmed (or failed, for a refusal no retry can
change); in_flight goes back to pending for a retry. This module runs the outbox (its threads, claims
and retries); the schema and its statements are in store.py.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import queue
import random
import sqlite3
import threading
import time
from typing import Callable, Iterator, Optional, Sequence

from . import store
from .errors import (
    INVALID_PARAMETER,
    INVALID_REQUEST,
    NOT_FOUND,
    PAYLOAD_TOO_LARGE,
    UNSUPPORTED_MEDIA_TYPE,
    EarshotError,
)
# Storage names, importable from here as before the split (store.py holds them).
from .store import (  # noqa: F401
    _OPEN_STATES,
    _SCHEMA,
    DUPLICATE,
    NEW,
    REPLAYED,
    _Claim,
    _claimant,
    _is_dead,
)

#: Seconds after the 1st, 2nd, ... failed attempt; the last repeats for ever. Each gets +-10% jitter.
DEFAULT_RETRY_SCHEDULE = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0)
#: Refusals that no later attempt can turn into 2000: the callback is then failed, not retried.
PERMANENT_REFUSALS = frozenset({INVALID_REQUEST, INVALID_PARAMETER, NOT_FOUND, PAYLOAD_TOO_LARGE,
                                UNSUPPORTED_MEDIA_TYPE})

logger = logging.getLogger("earshot_partner.outbox")

_PRUNE_EVERY_SECONDS = 600.0


class Outbox:
    """Durable nonces, events and receipt callbacks in the sqlite file ``path``.

    ``confirm(audio_id)`` sends one callback (``Client.confirm_receipt``), and ``confirm(audio_id,
    erased=True)`` an erasure confirmation; it returns once the platform answered 2000 and raises
    otherwise. Several processes may share the file (a WSGI server's
    workers): each claims callbacks under a lease, and a process started on it takes over what a
    dead process on this machine had claimed.
    """

    def __init__(
        self,
        path: str,
        confirm: Callable[..., None],
        *,
        retry_schedule: Sequence[float] = DEFAULT_RETRY_SCHEDULE,
        answer_grace: float = 10.0,
        lease: float = 120.0,
        replay_window: float = 7 * 86400.0,
        poll_interval: float = 5.0,
        concurrency: int = 4,
        clock: Callable[[], float] = time.time,
        start: bool = True,
    ) -> None:
        if not retry_schedule or any(delay < 0 for delay in retry_schedule):
            raise ValueError("retry_schedule must be a non-empty list of delays >= 0")
        if not _takes_erased(confirm):
            raise ValueError("confirm must take erased=True (an erasure confirmation), as"
                             " Client.confirm_receipt does")
        self.path = path
        self._confirm = confirm
        self._schedule = tuple(retry_schedule)
        #: A held callback whose answer never went out is sent anyway after this long.
        self._answer_grace = answer_grace
        self._lease = lease
        self._replay_window = replay_window
        self._poll_interval = poll_interval
        self._concurrency = concurrency
        self._clock = clock
        self._claimant = _claimant()
        self._db = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
        self._db_lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._jobs: "queue.Queue[Optional[_Claim]]" = queue.Queue()
        self._busy = 0
        self._busy_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._pruned_at = 0.0
        self._closed = False
        self._setup()
        if start:
            self.start()

    # The receiver's side

    def admit(self, key_version: int, nonce: str, event_id: str) -> str:
        """Takes the envelope's nonce: REPLAYED when taken within the replay window, else NEW, or
        DUPLICATE when the event was received before."""
        now = self._clock()
        with self._transaction() as db:
            return store.admit(db, key_version, nonce, event_id, now, self._replay_window)

    def record(self, event_id: str, audio_id: str, event_type: str, *, callback: bool = True,
               erased: bool = False) -> Optional[int]:
        """Records the event (once) and, with ``callback``, a receipt callback held until release(),
        in one transaction; ``erased``: the callback confirms the recording's erasure. Returns the
        callback's id."""
        now = self._clock()
        with self._transaction() as db:
            return store.record(db, event_id, audio_id, event_type, now, callback=callback, erased=erased,
                                answer_grace=self._answer_grace, claimant=self._claimant)

    def is_received(self, event_id: str) -> bool:
        with self._transaction(write=False) as db:
            return store.is_received(db, event_id)

    def release(self, callback_id: int) -> None:
        """The answer of the push whose callback this is went out: it may be sent now."""
        if self._closed:
            return
        with self._transaction() as db:
            store.release(db, callback_id, self._clock())
        self.wake()

    def wake(self) -> None:
        """Look for due callbacks now."""
        self._wake.set()

    def callbacks(self, state: Optional[str] = None, audio_id: Optional[str] = None) -> list[dict]:
        """The callbacks as stored, oldest first, for operators and tests."""
        with self._transaction(write=False) as db:
            rows = store.callbacks(db, state, audio_id)
        names = ("callbackId", "eventId", "audioId", "erased", "state", "attempts", "failures", "lastError",
                 "createdAt", "doneAt", "dueAt")
        return [{**dict(zip(names, row)), "erased": bool(row[3])} for row in rows]

    # Running

    def start(self) -> None:
        """Starts the threads that send callbacks (the constructor does, unless start=False)."""
        if self._threads:
            return
        self._threads.append(threading.Thread(target=self._dispatch, name="earshot-outbox", daemon=True))
        for number in range(self._concurrency):
            name = f"earshot-callback-{number}"
            self._threads.append(threading.Thread(target=self._work, name=name, daemon=True))
        for thread in self._threads:
            thread.start()

    def close(self, timeout: float = 5.0) -> None:
        """Stops sending; callbacks still being sent after ``timeout`` are left to the next process."""
        if self._closed:
            return
        self._stopping.set()
        self._wake.set()
        for _ in range(self._concurrency):
            self._jobs.put(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._db_lock:
            self._closed = True
            with contextlib.suppress(sqlite3.Error):
                # Claims of attempts cut off: due at once for whoever opens the file next.
                store.unclaim_own(self._db, self._clock(), self._claimant)
            self._db.close()

    def __enter__(self) -> "Outbox":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # Internals

    @contextlib.contextmanager
    def _transaction(self, write: bool = True) -> Iterator[sqlite3.Connection]:
        with self._db_lock:
            if self._closed:
                raise RuntimeError("the outbox is closed")
            # IMMEDIATE: the write lock from the start, so that two processes never both read a row
            # as claimable.
            self._db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _setup(self) -> None:
        with self._db_lock:
            store.setup(self._db)
        self._take_over_dead_claims()

    def _take_over_dead_claims(self) -> None:
        """Callbacks held or claimed by a process of this machine that is gone are due now."""
        with self._transaction() as db:
            store.take_over_dead_claims(db, self._clock)

    def _dispatch(self) -> None:
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                self._prune_nonces()
                delay = self._claim_due()
            except Exception as error:  # the thread must outlive any failure: it sends every callback
                if self._stopping.is_set():
                    return
                logger.warning("receipt callbacks: cannot read the outbox: %s", error)
                delay = self._poll_interval
            self._wake.wait(delay)

    def _claim_due(self) -> float:
        """Claims what is due into the free threads; returns how long to wait before looking again."""
        with self._busy_lock:
            free = self._concurrency - self._busy
        if free <= 0:
            return self._poll_interval  # a finishing attempt wakes the dispatcher
        now = self._clock()
        with self._transaction() as db:
            rows, next_due = store.claim_due(db, now, free, self._claimant, self._lease)
        for callback_id, event_id, audio_id, claim_no, failures, erased in rows:
            with self._busy_lock:
                self._busy += 1
            self._jobs.put(_Claim(callback_id, event_id, audio_id, claim_no + 1, failures, bool(erased)))
        if len(rows) == free:
            return self._poll_interval  # more may be due: a finishing attempt wakes the dispatcher
        if next_due is None:
            return self._poll_interval
        return min(self._poll_interval, max(0.0, next_due - now))

    def _work(self) -> None:
        while True:
            claim = self._jobs.get()
            if claim is None:
                return
            try:
                self._attempt(claim)
            finally:
                with self._busy_lock:
                    self._busy -= 1
                self._wake.set()

    def _attempt(self, claim: _Claim) -> None:
        try:
            if claim.erased:
                self._confirm(claim.audio_id, erased=True)
            else:
                self._confirm(claim.audio_id)
        except EarshotError as error:
            permanent = error.code in PERMANENT_REFUSALS
            self._settle(claim, "failed" if permanent else "retry", str(error))
            return
        except Exception as error:  # the partner's confirm may raise anything: retried
            self._settle(claim, "retry", f"{type(error).__name__}: {error}")
            return
        self._settle(claim, "confirmed", None)

    def _settle(self, claim: _Claim, outcome: str, error: Optional[str]) -> None:
        now = self._clock()
        delay = self._retry_delay(claim.failures)
        ids = f"audioId {claim.audio_id} (eventId {claim.event_id})"
        what = "erasure confirmation" if claim.erased else "receipt callback"
        if outcome == "confirmed":
            logger.info("%s confirmed: %s", "erasure" if claim.erased else "receipt", ids)
        elif outcome == "failed":
            logger.error("%s refused for good: %s: %s", what, ids, error)
        else:
            logger.warning("%s failed, retried in %.1f s: %s: %s", what, delay, ids, error)
        try:
            with self._transaction() as db:
                self._store_outcome(db, claim, outcome, error, now, delay)
        except (sqlite3.Error, RuntimeError) as failure:
            # The claim's lease ends and the callback is sent again: nothing is lost.
            logger.warning("receipt callbacks: cannot record an attempt: %s", failure)

    def _store_outcome(
        self, db: sqlite3.Connection, claim: _Claim, outcome: str, error: Optional[str], now: float,
        delay: float,
    ) -> None:
        """The attempt's result, under its claim only (a claim whose lease ended and was taken over moves
        nothing)."""
        store.store_outcome(db, claim, outcome, error, now, delay, self._claimant)

    def _retry_delay(self, failures: int) -> float:
        base = self._schedule[min(failures, len(self._schedule) - 1)]
        return base * random.uniform(0.9, 1.1)

    def _prune_nonces(self) -> None:
        now = self._clock()
        if now - self._pruned_at < _PRUNE_EVERY_SECONDS:
            return
        self._pruned_at = now
        with self._transaction() as db:
            store.prune_nonces(db, now)


def _takes_erased(confirm: Callable[..., None]) -> bool:
    """Whether ``confirm`` can be called with ``erased=True``; a callable whose signature cannot be read
    is taken at its word."""
    try:
        parameters = inspect.signature(confirm).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(parameter.kind is inspect.Parameter.VAR_KEYWORD
               or (parameter.name == "erased" and parameter.kind is not inspect.Parameter.POSITIONAL_ONLY)
               for parameter in parameters)
