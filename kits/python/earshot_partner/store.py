"""The outbox's sqlite storage: the schema and every statement run on it, for accepted nonces, received
events and their receipt callbacks. Each function runs inside a transaction the Outbox opens (see
outbox.py); the Outbox's threads and retry loop decide when.

Callback states: held -> pending -> in_flight -> confirmed (or failed, for a refusal no retry can
change); in_flight goes back to pending for a retry.
"""

from __future__ import annotations

import os
import socket
import sqlite3
from dataclasses import dataclass
from typing import Callable, Optional

NEW, DUPLICATE, REPLAYED = "new", "duplicate", "replayed"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS earshot_seen_nonces (
  key_version INTEGER NOT NULL,
  nonce TEXT NOT NULL,
  expires_at REAL NOT NULL,
  PRIMARY KEY (key_version, nonce)
) WITHOUT ROWID;
-- One row per eventId ever received: repeated pushes of it are not handed over again.
CREATE TABLE IF NOT EXISTS earshot_received_events (
  event_id TEXT PRIMARY KEY,
  audio_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  received_at REAL NOT NULL
);
-- One receipt callback per acknowledged push. due_at: when a held or pending callback may be sent, or
-- when an in_flight claim's lease ends; NULL once confirmed or failed. erased: 1 for a deletion's, which
-- confirms the erasure of the recording (sent with erased: true).
CREATE TABLE IF NOT EXISTS earshot_receipt_callbacks (
  callback_id INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id TEXT NOT NULL,
  audio_id TEXT NOT NULL,
  erased INTEGER NOT NULL DEFAULT 0,
  created_at REAL NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('held', 'pending', 'in_flight', 'confirmed', 'failed')),
  due_at REAL,
  claimed_by TEXT,
  claim_no INTEGER NOT NULL DEFAULT 0,
  failures INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  done_at REAL,
  CHECK ((state IN ('confirmed', 'failed')) = (due_at IS NULL))
);
CREATE INDEX IF NOT EXISTS earshot_receipt_callbacks_due
  ON earshot_receipt_callbacks (due_at) WHERE due_at IS NOT NULL;
"""

_OPEN_STATES = "('held', 'pending', 'in_flight')"

# One identity per process, so that a process that took over the pid of a dead one (a container's
# pid 1) can still tell the dead one's claims from its own.
_process_token = (os.getpid(), os.urandom(6).hex())


def _claimant() -> str:
    global _process_token
    if _process_token[0] != os.getpid():  # forked
        _process_token = (os.getpid(), os.urandom(6).hex())
    return f"{socket.gethostname()}/{_process_token[0]}/{_process_token[1]}"


@dataclass(frozen=True)
class _Claim:
    callback_id: int
    event_id: str
    audio_id: str
    claim_no: int
    failures: int
    erased: bool = False


def setup(db: sqlite3.Connection) -> None:
    db.execute("PRAGMA journal_mode = WAL")
    # FULL: a transaction that returned survives a power cut, not only a crash.
    db.execute("PRAGMA synchronous = FULL")
    db.executescript(_SCHEMA)
    _add_erased(db)


def _add_erased(db: sqlite3.Connection) -> None:
    """A file made before callbacks carried the erased flag gets its column (each of its callbacks is a
    receipt: deletions had none). Under the write lock, so that two processes do not both add it."""
    db.execute("BEGIN IMMEDIATE")
    try:
        columns = {row[1] for row in db.execute("PRAGMA table_info(earshot_receipt_callbacks)")}
        if "erased" not in columns:
            db.execute("ALTER TABLE earshot_receipt_callbacks ADD COLUMN erased INTEGER NOT NULL DEFAULT 0")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def admit(db: sqlite3.Connection, key_version: int, nonce: str, event_id: str, now: float,
          replay_window: float) -> str:
    row = db.execute(
        "SELECT expires_at FROM earshot_seen_nonces WHERE key_version = ? AND nonce = ?",
        (key_version, nonce),
    ).fetchone()
    if row is not None and row[0] > now:
        return REPLAYED
    db.execute(
        "INSERT OR REPLACE INTO earshot_seen_nonces (key_version, nonce, expires_at) VALUES (?, ?, ?)",
        (key_version, nonce, now + replay_window),
    )
    known = db.execute("SELECT 1 FROM earshot_received_events WHERE event_id = ?", (event_id,))
    return DUPLICATE if known.fetchone() else NEW


def record(db: sqlite3.Connection, event_id: str, audio_id: str, event_type: str, now: float, *,
           callback: bool, erased: bool, answer_grace: float, claimant: str) -> Optional[int]:
    db.execute(
        "INSERT OR IGNORE INTO earshot_received_events (event_id, audio_id, event_type, received_at)"
        " VALUES (?, ?, ?, ?)",
        (event_id, audio_id, event_type, now),
    )
    if not callback:
        return None
    cursor = db.execute(
        "INSERT INTO earshot_receipt_callbacks (event_id, audio_id, erased, created_at, state, due_at,"
        " claimed_by) VALUES (?, ?, ?, ?, 'held', ?, ?)",
        (event_id, audio_id, int(erased), now, now + answer_grace, claimant),
    )
    return cursor.lastrowid


def is_received(db: sqlite3.Connection, event_id: str) -> bool:
    found = db.execute("SELECT 1 FROM earshot_received_events WHERE event_id = ?", (event_id,))
    return found.fetchone() is not None


def release(db: sqlite3.Connection, callback_id: int, now: float) -> None:
    db.execute(
        "UPDATE earshot_receipt_callbacks SET state = 'pending', due_at = ?, claimed_by = NULL"
        " WHERE callback_id = ? AND state = 'held'",
        (now, callback_id),
    )


def callbacks(db: sqlite3.Connection, state: Optional[str], audio_id: Optional[str]) -> list:
    return db.execute(
        "SELECT callback_id, event_id, audio_id, erased, state, attempts, failures, last_error,"
        "       created_at, done_at, due_at"
        "  FROM earshot_receipt_callbacks"
        " WHERE (? IS NULL OR state = ?) AND (? IS NULL OR audio_id = ?)"
        " ORDER BY callback_id",
        (state, state, audio_id, audio_id),
    ).fetchall()


def unclaim_own(db: sqlite3.Connection, now: float, claimant: str) -> None:
    """Claims of attempts cut off: due at once for whoever opens the file next."""
    db.execute(
        "UPDATE earshot_receipt_callbacks SET state = 'pending', due_at = ?, claimed_by = NULL"
        " WHERE state = 'in_flight' AND claimed_by = ?",
        (now, claimant),
    )


def take_over_dead_claims(db: sqlite3.Connection, clock: Callable[[], float]) -> None:
    """Callbacks held or claimed by a process of this machine that is gone are due now."""
    host = socket.gethostname()
    claimants = db.execute(
        f"SELECT DISTINCT claimed_by FROM earshot_receipt_callbacks"
        f" WHERE state IN {_OPEN_STATES} AND claimed_by IS NOT NULL"
    ).fetchall()
    for (claimant,) in claimants:
        if _is_dead(claimant, host):
            db.execute(
                "UPDATE earshot_receipt_callbacks SET state = 'pending', due_at = ?, claimed_by = NULL"
                " WHERE claimed_by = ? AND state IN ('held', 'in_flight')",
                (clock(), claimant),
            )


def claim_due(db: sqlite3.Connection, now: float, limit: int, claimant: str,
              lease: float) -> tuple:
    """Claims up to ``limit`` due callbacks under ``claimant``: (their rows, the next due_at or None)."""
    rows = db.execute(
        f"SELECT callback_id, event_id, audio_id, claim_no, failures, erased FROM earshot_receipt_callbacks"
        f" WHERE state IN {_OPEN_STATES} AND due_at <= ? ORDER BY due_at LIMIT ?",
        (now, limit),
    ).fetchall()
    for row in rows:
        db.execute(
            "UPDATE earshot_receipt_callbacks SET state = 'in_flight', claim_no = claim_no + 1,"
            " claimed_by = ?, due_at = ? WHERE callback_id = ?",
            (claimant, now + lease, row[0]),
        )
    next_due = db.execute(
        f"SELECT min(due_at) FROM earshot_receipt_callbacks WHERE state IN {_OPEN_STATES}"
    ).fetchone()[0]
    return rows, next_due


def store_outcome(
    db: sqlite3.Connection, claim: _Claim, outcome: str, error: Optional[str], now: float,
    delay: float, claimant: str,
) -> None:
    """The attempt's result, under its claim only (a claim whose lease ended and was taken over moves
    nothing)."""
    retry = outcome == "retry"
    db.execute(
        "UPDATE earshot_receipt_callbacks SET state = ?, due_at = ?, claimed_by = NULL, failures = ?,"
        " attempts = attempts + 1, last_error = ?, done_at = ?"
        " WHERE callback_id = ? AND state = 'in_flight' AND claimed_by = ? AND claim_no = ?",
        ("pending" if retry else outcome, now + delay if retry else None,
         claim.failures + 1 if retry else 0, error, None if retry else now,
         claim.callback_id, claimant, claim.claim_no),
    )


def prune_nonces(db: sqlite3.Connection, now: float) -> None:
    db.execute("DELETE FROM earshot_seen_nonces WHERE expires_at <= ?", (now,))


def _is_dead(claimant: str, host: str) -> bool:
    """Whether a claimant (host/pid/token) is a process of this machine that no longer runs."""
    parts = claimant.split("/")
    if os.name != "posix":
        return False  # no way to ask without signalling it: the lease will tell
    if len(parts) != 3 or parts[0] != host or not parts[1].isdigit():
        return False  # another machine's, or unknown: its lease will tell
    pid = int(parts[1])
    if pid == os.getpid():
        return parts[2] != _process_token[1]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it exists, under another user
    return False
