"""The plaintexts of the self-service routes, checked for what the kit can check before sending (types,
ranges, the fixed choices): a bad argument raises EarshotError 4001 naming the wire's field. The
platform checks the rest (a URL's address policy, the event type names) and words its refusals alike."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable, Optional, Union

from .envelope import is_json_integer
from .messages import INSTANT_RULE, MAX_PAGE_SIZE, invalid, is_instant

MAX_ID = 2**53 - 1
WINDOWS = ("24h", "7d")
ACCESS = ("view", "manage")
#: The receiver check waits this long for each receipt callback, at most.
MAX_CALLBACK_SECONDS = 60
#: What ``replay_since`` replays unless told otherwise.
REPLAY_STATES = ("failed", "unconfirmed")

Instant = Union[str, datetime]


class _Unset:
    """An argument not given: the field is left out of the request (``None`` is sent as null)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


def check_id(value: Any, name: str) -> int:
    return check_range(value, name, 1, MAX_ID)


def check_range(value: Any, name: str, low: int, high: int) -> int:
    if not is_json_integer(value) or not low <= value <= high:
        raise invalid(name, f"must be an integer from {low} to {high}")
    return int(value)


def endpoint_fields(
    url: Any = UNSET,
    event_types: Any = UNSET,
    description: Any = UNSET,
    max_per_second: Any = UNSET,
    enabled: Any = UNSET,
) -> dict:
    """An endpoint's fields as the wire names them; those not given are left out."""
    fields: dict = {}
    if url is not UNSET:
        if not isinstance(url, str) or not url:
            raise invalid("url", "must be an absolute http:// or https:// URL")
        fields["url"] = url
    if event_types is not UNSET:
        fields["eventTypes"] = _strings(event_types, "eventTypes")
    if description is not UNSET:
        if not isinstance(description, str):
            raise invalid("description", "must be a string")
        fields["description"] = description
    if max_per_second is not UNSET:
        if max_per_second is not None and (not is_json_integer(max_per_second) or max_per_second < 1):
            raise invalid("maxPerSecond", "must be an integer of at least 1, or None for no limit")
        fields["maxPerSecond"] = max_per_second
    if enabled is not UNSET:
        if not isinstance(enabled, bool):
            raise invalid("enabled", "must be True or False")
        fields["enabled"] = enabled
    return fields


def deliveries_filter(
    state: Optional[str] = None,
    event_type: Optional[str] = None,
    audio_id: Optional[str] = None,
    since: Optional[Instant] = None,
    until: Optional[Instant] = None,
    cursor: Optional[str] = None,
    size: Optional[int] = None,
) -> dict:
    """The deliveries list's filter as the wire names it; ``None`` leaves a field out."""
    request: dict = {}
    for name, value in (("state", state), ("eventType", event_type), ("audioId", audio_id), ("cursor", cursor)):
        if value is not None:
            if not isinstance(value, str) or not value:
                raise invalid(name, "must be a non-empty string")
            request[name] = value
    for name, value in (("since", since), ("until", until)):
        if value is not None:
            request[name] = instant(value, name)
    if size is not None:
        request["size"] = check_range(size, "size", 1, MAX_PAGE_SIZE)
    return request


def replay_since_request(since: Instant, states: Iterable[str]) -> dict:
    return {"states": _strings(states, "states"), "since": instant(since, "since")}


def instant(value: Any, name: str) -> str:
    """An ISO 8601 instant with its offset: as given, or an aware datetime's ``isoformat()``."""
    if isinstance(value, datetime):
        if value.utcoffset() is None:
            raise invalid(name, "must be an aware datetime (with tzinfo): a naive one names no instant")
        return value.isoformat()
    if not is_instant(value):
        raise invalid(name, INSTANT_RULE)
    return value


def choice(value: Any, name: str, allowed: tuple) -> str:
    if value not in allowed:
        raise invalid(name, f"must be one of {', '.join(allowed)}")
    return value


def _strings(values: Any, name: str) -> list:
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise invalid(name, "must be a list of strings")
    listed = list(values)
    if not listed or not all(isinstance(each, str) and each for each in listed):
        raise invalid(name, "must be a non-empty list of non-empty strings")
    return listed
