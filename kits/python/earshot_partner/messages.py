"""The plaintexts of the protocol: times, query filters, change feed requests and push events."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping, Optional

from .envelope import is_json_integer as is_integer
from .errors import INVALID_PARAMETER, EarshotError

MAX_PAGE = 2**31 - 1
MAX_PAGE_SIZE = 100

AUDIO_READY = "recording.audio_ready"
TRANSCRIPT_READY = "recording.transcript_ready"
UPDATED = "recording.updated"
DELETED = "recording.deleted"
EVENT_TYPES = (AUDIO_READY, TRANSCRIPT_READY, UPDATED, DELETED)

_INSTANT = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,6})?)?(?:Z|[+-](\d{2}):(\d{2}))$"
)
INSTANT_RULE = (
    "must be an ISO-8601 date-time with an explicit offset or Z and at most 6 fractional digits "
    "(microseconds), e.g. 2026-11-01T08:00:00.123456+08:00"
)


def invalid(field_name: str, rule: str) -> EarshotError:
    """A 4001 naming the field, as the platform words it."""
    return EarshotError(INVALID_PARAMETER, f"{field_name}: {rule}" if field_name else rule)


def is_instant(text: Any) -> bool:
    """An instant as the protocol writes it: explicit offset or Z, a real date, at most microseconds."""
    # re's $ also matches before a final newline: fullmatch does not.
    match = _INSTANT.fullmatch(text) if isinstance(text, str) else None
    if not match:
        return False
    year, month, day, hour, minute, second, offset_hour, offset_minute = (
        int(part or 0) for part in match.groups()
    )
    if year < 1 or offset_hour > 15 or offset_minute > 59:
        return False
    try:
        datetime(year, month, day, hour, minute, second)
    except ValueError:
        return False
    return True


def _check_id(value: Any, name: str, max_length: Optional[int] = 128) -> None:
    too_long = max_length is not None and isinstance(value, str) and len(value) > max_length
    if not isinstance(value, str) or not value or too_long:
        limit = f" of at most {max_length} characters" if max_length else ""
        raise invalid(name, f"must be a non-empty string{limit}")
    if "\u0000" in value:
        raise invalid(name, "must not contain the character U+0000")


def _check_range(value: Any, name: str, low: int, high: int) -> None:
    if not is_integer(value) or not low <= value <= high:
        raise invalid(name, f"must be an integer from {low} to {high}")


def check_filter(query: Mapping[str, Any]) -> dict:
    """The query's filter, checked as the platform checks it (4001 naming the field)."""
    if not isinstance(query, Mapping):
        raise invalid("", "the filter must be an object")
    known = {"audioId", "deviceUid", "startTime", "endTime", "page", "size"}
    for name in query:
        if name not in known:
            raise invalid(name, "is not a known field")
    for name in ("audioId", "deviceUid"):
        if name in query:
            _check_id(query[name], name)
    for name in ("startTime", "endTime"):
        if name in query and not is_instant(query[name]):
            raise invalid(name, INSTANT_RULE)
    if "page" in query:
        _check_range(query["page"], "page", 1, MAX_PAGE)
    if "size" in query:
        _check_range(query["size"], "size", 1, MAX_PAGE_SIZE)
    return dict(query)


def check_changes_request(cursor: Optional[str], size: Optional[int]) -> dict:
    request: dict = {}
    if cursor is not None:
        if not isinstance(cursor, str) or not 1 <= len(cursor) <= 200:
            raise invalid("cursor", "must be a nextCursor as the feed answered it")
        request["cursor"] = cursor
    if size is not None:
        _check_range(size, "size", 1, MAX_PAGE_SIZE)
        request["size"] = size
    return request


def parse_sentences(serialized: Any) -> list:
    """``transcriptSentences`` parsed: a JSON array of {text, beginTime, endTime} in a string."""
    rule = "must be a JSON array of {text: string, beginTime: integer, endTime: integer}"
    if not isinstance(serialized, str):
        raise invalid("transcriptSentences", "must be a string")
    try:
        value = json.loads(serialized)
    except (ValueError, RecursionError):
        raise invalid("transcriptSentences", "is not valid JSON") from None
    if not isinstance(value, list) or not all(_is_sentence(each) for each in value):
        raise invalid("transcriptSentences", rule)
    return value


def _is_sentence(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("text"), str)
        and is_integer(value.get("beginTime"))
        and is_integer(value.get("endTime"))
    )


@dataclass(frozen=True)
class PushEvent:
    """A push as the receiver hands it over. ``raw`` is the whole plaintext, unknown fields included."""

    event_id: str
    event_type: str
    audio_id: str
    occurred_at: str
    #: The recording as it is now (set A or B, fields the kit does not know kept); {} for a deletion.
    data: dict
    raw: dict = field(repr=False)

    @property
    def is_deletion(self) -> bool:
        return self.event_type == DELETED

    @property
    def sentences(self) -> Optional[list]:
        """``data.transcriptSentences`` parsed (set A), or None (set B, deletion)."""
        if "transcriptId" not in self.data:
            return None
        return parse_sentences(self.data.get("transcriptSentences"))


def parse_push_event(plaintext: Mapping[str, Any]) -> PushEvent:
    """A push's plaintext checked as docs/protocol.md ("Pushes") describes it; 4001 naming the field.

    Fields the kit does not know are accepted, in the event and in its data: a later version of the
    platform may add some (e.g. ``recordedAt``).
    """
    _check_id(plaintext.get("eventId"), "eventId")
    event_type = plaintext.get("eventType")
    if event_type not in EVENT_TYPES:
        raise invalid("eventType", f"must be one of {', '.join(EVENT_TYPES)}")
    _check_id(plaintext.get("audioId"), "audioId", max_length=None)
    if not is_instant(plaintext.get("occurredAt")):
        raise invalid("occurredAt", INSTANT_RULE)
    data = plaintext.get("data")
    if not isinstance(data, dict):
        raise invalid("data", "must be an object")
    if event_type != DELETED:
        _check_recording_data(data)
    return PushEvent(
        event_id=plaintext["eventId"],
        event_type=event_type,
        audio_id=plaintext["audioId"],
        occurred_at=plaintext["occurredAt"],
        data=data,
        raw=dict(plaintext),
    )


_STRING, _INTEGER, _COUNT = "a string", "an integer", "an integer >= 0"
_SET_B = {"deviceUid": _STRING, "title": _STRING, "denoiseUrl": _STRING, "recordDuration": _COUNT}
_SET_A = {
    "deviceUid": _STRING,
    "title": _STRING,
    "transcriptId": _INTEGER,
    "transcriptText": _STRING,
    "transcriptSentences": _STRING,
    "durationMs": _COUNT,
    "wordsCount": _COUNT,
}
_SET_A_AUDIO = {"denoiseUrl": _STRING, "recordDuration": _COUNT}


def _check_recording_data(data: Mapping[str, Any]) -> None:
    """Set A (it has transcriptId) or set B; only the fields each set requires are required."""
    transcript = "transcriptId" in data
    required = _SET_A if transcript else _SET_B
    for name, kind in required.items():
        if name not in data:
            raise invalid(f"data.{name}", "is required")
        _check_kind(data[name], f"data.{name}", kind)
    if transcript:
        for name, kind in _SET_A_AUDIO.items():
            if name in data:
                _check_kind(data[name], f"data.{name}", kind)
        try:
            parse_sentences(data["transcriptSentences"])
        except EarshotError as error:
            raise invalid("data.transcriptSentences", error.msg.split(": ", 1)[-1]) from None


def _check_kind(value: Any, name: str, kind: str) -> None:
    ok = {
        _STRING: isinstance(value, str),
        _INTEGER: is_integer(value),
        _COUNT: is_integer(value) and value >= 0,
    }[kind]
    if not ok:
        raise invalid(name, f"must be {kind}")
