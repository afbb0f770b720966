"""Receiving pushes, framework-neutral: one request body and its headers in, the answer out."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Callable, Iterable, Mapping, Optional, Tuple, Union

from .envelope import is_json_failure, load_key, open_envelope, parse_json
from .errors import (
    INTERNAL_ERROR,
    INVALID_PARAMETER,
    INVALID_REQUEST,
    OK,
    PAYLOAD_TOO_LARGE,
    REPLAYED,
    UNSUPPORTED_MEDIA_TYPE,
    EarshotError,
    http_status_of,
)
from .messages import PushEvent, parse_push_event
from .outbox import DUPLICATE, Outbox
from .outbox import REPLAYED as NONCE_REPLAYED

logger = logging.getLogger("earshot_partner.receiver")

DEFAULT_BODY_LIMIT = 1024 * 1024
#: Where the platform pushes unless told otherwise (what the Node kit serves too).
DEFAULT_PUSH_PATH = "/earshot/push"
#: The operator's receiver check marks its pushes with this header (value "1") and audioIds with this prefix.
CHECK_HEADER = "x-earshot-check"
CHECK_AUDIO_ID_PREFIX = "check_"

Headers = Union[Mapping[str, Any], Iterable[Tuple[Any, Any]]]


def _noop() -> None:
    pass


class PushAnswer(tuple):
    """``(status, body)``: unpacks as a pair. Call ``after_response()`` once the answer was sent.

    The receipt callback of a push answered 2000 is held until then (at most the outbox's
    ``answer_grace``, 10 s: an answer that never went out does not hold it for ever).
    """

    def __new__(cls, status: int, body: bytes, after_response: Callable[[], None] = _noop) -> "PushAnswer":
        answer = super().__new__(cls, (status, body))
        answer._after_response = after_response
        answer._once = threading.Lock()
        return answer

    @property
    def status(self) -> int:
        return self[0]

    @property
    def body(self) -> bytes:
        return self[1]

    @property
    def code(self) -> int:
        return json.loads(self[1])["code"]

    def after_response(self) -> None:
        """Releases the receipt callback: the answer went out. Calling it again does nothing."""
        if not self._once.acquire(blocking=False):
            return
        try:
            self._after_response()
        except Exception:  # the answer is gone already: the callback then waits for the grace
            logger.exception("push receiver: could not release the receipt callback")


def answer(code: int, msg: str, after_response: Callable[[], None] = _noop) -> PushAnswer:
    body = json.dumps({"code": code, "msg": msg}).encode("utf-8")
    return PushAnswer(http_status_of(code), body, after_response)


class _Refusal(Exception):
    def __init__(self, code: int, msg: str) -> None:
        super().__init__(msg)
        self.code = code
        self.msg = msg


class _Storing:
    """An eventId being stored by one thread while the platform pushes it again."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.stored = False


class Receiver:
    """Opens pushes, refuses replays, hands each new event to ``on_event`` once, answers, then calls back.

    Every push answered 2000, a repeated one included (the platform pushes again when it still waits for
    a callback), gets a receipt callback of its own, sent once its answer went out.

    ``on_event(event)`` must store the event durably before it returns (an upsert keyed by audioId:
    a push is delivered at least once); the push is acknowledged only once it returned, and answered
    5000 when it raises, so that the platform pushes it again. A ``recording.deleted`` is handed to it
    too (``event.is_deletion``): remove your copy, its audio and any other copy included, durably, before
    returning; its callback then confirms the erasure (``erased: true``). A push of the operator's
    receiver check (header X-Earshot-Check: 1, audioId ``check_…``) is answered (a data push is called
    back) but never handed to it. Give ``secret`` (and optionally ``key_version``) or ``keys`` by
    keyVersion, e.g. ``{1: old_secret, 2: new_secret}`` during a key rotation.
    """

    def __init__(
        self,
        *,
        on_event: Callable[[PushEvent], None],
        outbox: Outbox,
        secret: Optional[str] = None,
        key_version: Optional[int] = None,
        keys: Optional[Mapping[int, str]] = None,
        body_limit: int = DEFAULT_BODY_LIMIT,
    ) -> None:
        if not callable(on_event):
            raise ValueError("on_event must be a function")
        self._keys = _load_keys(secret, key_version, keys)
        self._on_event = on_event
        self._outbox = outbox
        self.body_limit = body_limit
        self._lock = threading.Lock()
        self._storing: dict[str, _Storing] = {}

    def handle_push(self, body: Union[bytes, str], headers: Headers) -> PushAnswer:
        """One push in, its answer out; never raises. Send the answer, then call its after_response()."""
        try:
            raw = body.encode("utf-8") if isinstance(body, str) else bytes(body)
            return self._receive(raw, _lower_keys(headers))
        except _Refusal as refusal:
            logger.warning("push refused (%d): %s", refusal.code, refusal.msg)
            return answer(refusal.code, refusal.msg)
        except Exception:
            logger.exception("push failed")
            return answer(INTERNAL_ERROR, "internal error")

    def _receive(self, body: bytes, headers: Mapping[str, str]) -> PushAnswer:
        if not is_json_content_type(headers.get("content-type")):
            raise _Refusal(UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json")
        if len(body) > self.body_limit:
            raise _Refusal(PAYLOAD_TOO_LARGE, f"the body is over {self.body_limit} bytes")
        envelope, event = self._open(body)
        check = is_check_push(headers.get(CHECK_HEADER), event.audio_id)
        admission = self._outbox.admit(envelope["keyVersion"], envelope["nonce"], event.event_id)
        if admission == NONCE_REPLAYED:
            raise _Refusal(REPLAYED, "this envelope nonce was already used")
        if admission == DUPLICATE:
            return self._acknowledge(event, repeated=True, check=check)
        return self._store_once(event, check)

    def _open(self, body: bytes) -> tuple[dict, PushEvent]:
        try:
            parsed = parse_json(body.decode("utf-8"))
        except UnicodeDecodeError:
            raise _Refusal(INVALID_REQUEST, "the body is not UTF-8") from None
        if is_json_failure(parsed):
            raise _Refusal(INVALID_REQUEST, "the body is not JSON")
        try:
            opened = open_envelope(parsed, self._keys.get)
            event = parse_push_event(opened.plaintext)
        except EarshotError as error:
            raise _Refusal(error.code or INVALID_REQUEST, error.msg) from None
        if event.event_id != opened.envelope["eventId"]:
            raise _Refusal(INVALID_PARAMETER, "eventId: must equal the envelope's eventId")
        return opened.envelope, event

    def _store_once(self, event: PushEvent, check: bool) -> PushAnswer:
        """Hands a new event to on_event and records it; the same eventId pushed again meanwhile waits."""
        while True:
            with self._lock:
                storing = self._storing.get(event.event_id)
                mine = storing is None
                if mine:
                    storing = self._storing[event.event_id] = _Storing()
            assert storing is not None
            if not mine:
                storing.done.wait()
                if storing.stored:
                    return self._acknowledge(event, repeated=True, check=check)
                continue
            try:
                # Another thread may have stored and recorded it since this push was admitted.
                if self._outbox.is_received(event.event_id):
                    storing.stored = True
                    return self._acknowledge(event, repeated=True, check=check)
                storing.stored = self._store(event, check)
                if not storing.stored:
                    return answer(INTERNAL_ERROR, "the recording could not be stored; push again later")
                return self._acknowledge(event, repeated=False, check=check)
            finally:
                storing.done.set()
                with self._lock:
                    del self._storing[event.event_id]

    def _store(self, event: PushEvent, check: bool) -> bool:
        """on_event; False when it raised (nothing is then recorded).

        A receiver check's push is recorded with its callback, as the check expects, but not handed over.
        """
        if check:
            logger.info("receiver check push %s (eventId %s): answered without storing it", event.audio_id,
                        event.event_id)
            return True
        try:
            self._on_event(event)
        except Exception:
            logger.exception(
                "on_event failed for eventId %s (audioId %s); answering 5000 so that the platform"
                " pushes it again", event.event_id, event.audio_id,
            )
            return False
        return True

    def _acknowledge(self, event: PushEvent, *, repeated: bool, check: bool) -> PushAnswer:
        """Records the event (once) with a callback for this very answer, released once it was sent.

        A deletion's callback, recorded once on_event removed the recording, confirms its erasure. The
        receiver check's deletion removed nothing: its acknowledgement alone confirms it, without a callback.
        """
        callback_id = self._outbox.record(
            event.event_id, event.audio_id, event.event_type, callback=not (event.is_deletion and check),
            erased=event.is_deletion,
        )
        logger.info(
            "push %s: %s %s (eventId %s)", "repeated, already received" if repeated else "received",
            event.event_type, event.audio_id, event.event_id,
        )
        msg = "success (already received)" if repeated else "success"
        if callback_id is None:
            return answer(OK, msg)
        return answer(OK, msg, lambda: self._outbox.release(callback_id))


def is_check_push(check_header: Optional[str], audio_id: str) -> bool:
    """A push of the operator's receiver check: the header X-Earshot-Check: 1 and a ``check_`` audioId.

    Only ever asked of a push that opened with the enterprise's key. Neither alone suffices, so a forged
    header cannot make the receiver skip a recording, nor can an audioId named alike (the platform refuses
    such audioIds anyway).
    """
    return check_header == "1" and audio_id.startswith(CHECK_AUDIO_ID_PREFIX)


def is_json_content_type(value: Optional[str]) -> bool:
    """application/json, any case, with parameters (a charset) or without."""
    return isinstance(value, str) and value.split(";", 1)[0].strip().lower() == "application/json"


def _lower_keys(headers: Headers) -> dict[str, str]:
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    lowered: dict[str, str] = {}
    for name, value in pairs:
        name = name.decode("latin-1") if isinstance(name, bytes) else str(name)
        value = value.decode("latin-1") if isinstance(value, bytes) else str(value)
        lowered.setdefault(name.lower(), value)
    return lowered


def _load_keys(
    secret: Optional[str], key_version: Optional[int], keys: Optional[Mapping[int, str]]
) -> "_KeyRing":
    if (secret is None) == (keys is None):
        raise ValueError("give either secret (with an optional key_version) or keys, not both")
    if secret is not None:
        if key_version is not None and (isinstance(key_version, bool) or not isinstance(key_version, int)
                                        or key_version < 1):
            raise ValueError("key_version must be a positive integer")
        return _KeyRing({key_version: load_key(secret)})
    assert keys is not None
    if not keys:
        raise ValueError("keys must hold at least one secret")
    ring = {}
    for version, each in keys.items():
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValueError(f"keys: {version!r} is not a keyVersion (a positive integer)")
        ring[version] = load_key(each)
    return _KeyRing(ring)


class _KeyRing:
    """Keys by keyVersion; the key under None opens every keyVersion (a secret without key_version)."""

    def __init__(self, keys: Mapping[Optional[int], bytes]) -> None:
        self._keys = dict(keys)

    def get(self, key_version: int) -> Optional[bytes]:
        return self._keys.get(key_version, self._keys.get(None))
