"""Pushes sealed as the platform seals them, a receipt callback that records its calls, and a test
case with a receiver on a fresh outbox."""

from __future__ import annotations

import json
import os
import tempfile
import threading
import uuid
from typing import Any, Callable, Optional

from earshot_partner import Outbox, PushEvent, Receiver
from earshot_partner.envelope import load_key, seal

from .support import TimedTestCase, wait_for

SECRET = "wv+7DCv0af3nC9Fme+s3OZBWDJc16kPLzKja6ht0Vq0="
OTHER_SECRET = "0123456789abcdefghijklmnopqrstuv"
JSON = {"Content-Type": "application/json"}

SET_B = {"deviceUid": "DEV-1", "title": "Standup", "denoiseUrl": "https://cdn.example.com/s.mp3",
         "recordDuration": 61000}
SET_A = {"deviceUid": "DEV-1", "title": "Call notes", "transcriptId": 7001, "transcriptText": "Hello. Bye.",
         "transcriptSentences": '[{"text":"Hello.","beginTime":0,"endTime":900}]', "durationMs": 1800,
         "wordsCount": 2}


def event(audio_id: str = "aud_1", event_type: str = "recording.audio_ready", **fields: Any) -> dict:
    plaintext = {
        "eventId": str(uuid.uuid4()),
        "eventType": event_type,
        "audioId": audio_id,
        "occurredAt": "2026-11-02T01:00:03.512Z",
        "data": {} if event_type == "recording.deleted" else dict(SET_B),
    }
    plaintext.update(fields)
    return plaintext


def sealed(plaintext: dict, secret: str = SECRET, key_version: int = 1) -> bytes:
    """A push body: the event sealed afresh (a new nonce every call), its eventId on the envelope."""
    envelope = seal(load_key(secret), key_version, plaintext["eventId"], plaintext)
    return json.dumps(envelope).encode("utf-8")


class Callbacks:
    """A receipt callback (``confirm``) recording each call; ``fail_with`` scripts failures first.
    ``erasures`` lists the audioIds of the calls with erased=True (in ``calls`` too)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.erasures: list[str] = []
        self.fail_with: list[Exception] = []
        self.before_call: Optional[Callable[[str], None]] = None
        self._changed = threading.Condition()

    def __call__(self, audio_id: str, erased: bool = False) -> None:
        if self.before_call:
            self.before_call(audio_id)
        with self._changed:
            self.calls.append(audio_id)
            if erased:
                self.erasures.append(audio_id)
            self._changed.notify_all()
            failure = self.fail_with.pop(0) if self.fail_with else None
        if failure is not None:
            raise failure

    def wait_for(self, count: int, timeout: float = 10.0) -> list[str]:
        with self._changed:
            if not self._changed.wait_for(lambda: len(self.calls) >= count, timeout):
                raise AssertionError(f"{count} callbacks expected within {timeout} s; got {self.calls}")
            return list(self.calls)


def temporary_database(test: Any) -> str:
    directory = tempfile.TemporaryDirectory()
    test.addCleanup(directory.cleanup)
    return os.path.join(directory.name, "outbox.sqlite")


def code_of(answer: tuple) -> int:
    status, body = answer
    code = json.loads(body)["code"]
    assert status == code // 10, (status, body)
    return code


class ReceiverCase(TimedTestCase):
    """A receiver whose held callbacks would wait a minute for their answer: only release sends them."""

    def setUp(self) -> None:
        super().setUp()
        self.path = temporary_database(self)
        self.confirm = Callbacks()
        self.events: list[PushEvent] = []
        self.outbox = self.open_outbox()
        self.receiver = self.make_receiver()

    def open_outbox(self, **options: object) -> Outbox:
        settings = {"answer_grace": 60.0, "retry_schedule": (0.01,), **options}
        outbox = Outbox(self.path, self.confirm, **settings)  # type: ignore[arg-type]
        self.addCleanup(outbox.close)
        return outbox

    def make_receiver(self, **options: object) -> Receiver:
        settings = {"secret": SECRET, **options}
        return Receiver(on_event=self.events.append, outbox=self.outbox, **settings)  # type: ignore[arg-type]

    def states_of(self, event_id: str) -> list:
        """The states of the event's callbacks, one per acknowledged push of it, oldest first."""
        return [each["state"] for each in self.outbox.callbacks() if each["eventId"] == event_id]

    def state_of(self, event_id: str) -> str:
        """The state of the event's latest callback."""
        return self.states_of(event_id)[-1]

    def wait_for_state(self, event_id: str, state: str) -> None:
        wait_for(lambda: self.state_of(event_id) == state, 10.0, f"{event_id} {state}")
