"""Erasure confirmation without a platform: a deletion push removes the recording and its audio from the
partner's store, and only then is its callback, with erased: true, sent through the outbox; kept across a
restart, and kept apart from the recording's own receipt. An outbox file of the layout before the erased
flag opens and sends what it held."""

from __future__ import annotations

import os
import sqlite3
import tempfile

from earshot_partner import EarshotError, Outbox, PushEvent, Receiver

from .pushes import JSON, SECRET, ReceiverCase, code_of, event, sealed
from .support import wait_for


class RecordingsWithAudio:
    """A partner's store: a sqlite table of recordings and a folder with each one's audio file."""

    def __init__(self, case: ReceiverCase) -> None:
        directory = tempfile.TemporaryDirectory()
        case.addCleanup(directory.cleanup)
        self.audio = os.path.join(directory.name, "audio")
        os.mkdir(self.audio)
        self.db = sqlite3.connect(os.path.join(directory.name, "recordings.sqlite"), check_same_thread=False)
        case.addCleanup(self.db.close)
        self.db.execute("CREATE TABLE recordings (audio_id TEXT PRIMARY KEY, title TEXT)")

    def audio_file(self, audio_id: str) -> str:
        return os.path.join(self.audio, f"{audio_id}.mp3")

    def on_event(self, pushed: PushEvent) -> None:
        if pushed.is_deletion:
            with self.db:
                self.db.execute("DELETE FROM recordings WHERE audio_id = ?", (pushed.audio_id,))
            if os.path.exists(self.audio_file(pushed.audio_id)):
                os.remove(self.audio_file(pushed.audio_id))
            descriptor = os.open(self.audio, os.O_RDONLY)
            try:
                os.fsync(descriptor)  # the removal durable before the erasure is confirmed
            finally:
                os.close(descriptor)
            return
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO recordings VALUES (?, ?)",
                            (pushed.audio_id, pushed.data["title"]))
        with open(self.audio_file(pushed.audio_id), "wb") as file:
            file.write(b"ID3 audio")

    def holds(self, audio_id: str) -> tuple:
        row = self.db.execute("SELECT 1 FROM recordings WHERE audio_id = ?", (audio_id,)).fetchone()
        return row is not None, os.path.exists(self.audio_file(audio_id))


class ErasureTest(ReceiverCase):
    def setUp(self) -> None:
        super().setUp()
        self.store = RecordingsWithAudio(self)
        self.receiver = Receiver(secret=SECRET, outbox=self.outbox, on_event=self.store.on_event)

    def test_a_deletion_removes_the_recording_and_its_audio_then_confirms_the_erasure(self) -> None:
        stored = event("aud_erased")
        self.receiver.handle_push(sealed(stored), JSON).after_response()
        self.assertEqual(self.confirm.wait_for(1), ["aud_erased"])
        self.assertEqual(self.store.holds("aud_erased"), (True, True))

        deletion = event("aud_erased", "recording.deleted")
        answer = self.receiver.handle_push(sealed(deletion), JSON)
        self.assertEqual(code_of(answer), 2000)
        self.assertEqual(self.store.holds("aud_erased"), (False, False))
        answer.after_response()
        self.assertEqual(self.confirm.wait_for(2), ["aud_erased", "aud_erased"])
        self.assertEqual(self.confirm.erasures, ["aud_erased"])
        self.wait_for_state(deletion["eventId"], "confirmed")
        # The receipt and the erasure confirmation of one audioId are two callbacks, each with its flag.
        self.assertEqual([(each["eventId"], each["erased"], each["state"]) for each in self.outbox.callbacks()],
                         [(stored["eventId"], False, "confirmed"), (deletion["eventId"], True, "confirmed")])

    def test_a_deletion_whose_removal_failed_is_answered_5000_and_nothing_is_confirmed(self) -> None:
        failures = [OSError("the disk is read-only")]

        def remove(pushed: PushEvent) -> None:
            if failures:
                raise failures.pop()
            self.store.on_event(pushed)

        receiver = Receiver(secret=SECRET, outbox=self.outbox, on_event=remove)
        deletion = event("aud_stubborn", "recording.deleted")
        self.assertEqual(code_of(receiver.handle_push(sealed(deletion), JSON)), 5000)
        self.assertEqual(self.outbox.callbacks(), [])
        receiver.handle_push(sealed(deletion), JSON).after_response()  # the platform pushes it again
        self.assertEqual(self.confirm.wait_for(1), ["aud_stubborn"])
        self.assertEqual(self.confirm.erasures, ["aud_stubborn"])

    def test_an_erasure_recorded_but_not_sent_is_sent_by_the_next_outbox_on_the_file(self) -> None:
        self.outbox.close()
        self.outbox = self.open_outbox(start=False)
        deletion = event("aud_restart_erased", "recording.deleted")
        receiver = Receiver(secret=SECRET, outbox=self.outbox, on_event=self.store.on_event)
        receiver.handle_push(sealed(deletion), JSON).after_response()
        self.assertEqual(self.state_of(deletion["eventId"]), "pending")
        self.outbox.close()  # as a crash would leave it: the erasure recorded, never sent
        self.outbox = self.open_outbox()
        self.assertEqual(self.confirm.wait_for(1), ["aud_restart_erased"])
        self.assertEqual(self.confirm.erasures, ["aud_restart_erased"])
        self.wait_for_state(deletion["eventId"], "confirmed")

    def test_4040_or_4001_for_an_erasure_confirmation_is_final(self) -> None:
        self.confirm.fail_with = [EarshotError(4040, "not a recording of this enterprise"),
                                  EarshotError(4001, "erased: the recording is not deleted")]
        never_had = event("aud_never_had", "recording.deleted")
        not_deleted = event("aud_not_deleted", "recording.deleted")
        self.receiver.handle_push(sealed(never_had), JSON).after_response()
        self.wait_for_state(never_had["eventId"], "failed")
        self.receiver.handle_push(sealed(not_deleted), JSON).after_response()
        self.wait_for_state(not_deleted["eventId"], "failed")
        self.assertEqual(self.confirm.erasures, ["aud_never_had", "aud_not_deleted"])

    def test_a_confirm_that_cannot_take_erased_is_refused_at_once(self) -> None:
        with self.assertRaises(ValueError):
            Outbox(self.path, lambda audio_id: None, start=False)


class EarlierLayoutTest(ReceiverCase):
    def test_a_file_made_before_the_erased_flag_opens_and_sends_its_pending_receipt(self) -> None:
        self.outbox.close()
        path = os.path.join(os.path.dirname(self.path), "earlier.sqlite")
        db = sqlite3.connect(path)
        db.executescript("""
            CREATE TABLE earshot_received_events (event_id TEXT PRIMARY KEY, audio_id TEXT NOT NULL,
              event_type TEXT NOT NULL, received_at REAL NOT NULL);
            CREATE TABLE earshot_receipt_callbacks (
              callback_id INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL, audio_id TEXT NOT NULL,
              created_at REAL NOT NULL,
              state TEXT NOT NULL CHECK (state IN ('held', 'pending', 'in_flight', 'confirmed', 'failed')),
              due_at REAL, claimed_by TEXT, claim_no INTEGER NOT NULL DEFAULT 0,
              failures INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT,
              done_at REAL, CHECK ((state IN ('confirmed', 'failed')) = (due_at IS NULL)));
            INSERT INTO earshot_received_events VALUES ('evt-earlier', 'aud_earlier', 'recording.audio_ready', 1);
            INSERT INTO earshot_receipt_callbacks (event_id, audio_id, created_at, state, due_at)
              VALUES ('evt-earlier', 'aud_earlier', 1, 'pending', 1);
        """)
        db.close()
        self.path = path
        self.outbox = self.open_outbox()
        self.assertEqual(self.confirm.wait_for(1), ["aud_earlier"])
        self.assertEqual(self.confirm.erasures, [])
        wait_for(lambda: self.outbox.callbacks()[0]["state"] == "confirmed", 10.0, "the receipt confirmed")
        self.assertEqual(self.outbox.callbacks()[0]["erased"], False)
        # Deletions arriving now are recorded in it as erasure confirmations.
        deletion = event("aud_earlier", "recording.deleted")
        self.make_receiver().handle_push(sealed(deletion), JSON).after_response()
        self.assertEqual(self.confirm.wait_for(2), ["aud_earlier", "aud_earlier"])
        self.assertEqual(self.confirm.erasures, ["aud_earlier"])
