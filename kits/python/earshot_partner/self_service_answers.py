"""What the self-service routes answer, as TypedDicts (plain dicts at run time: a field a later platform
adds is kept), and the checks the client runs on each answer before handing it over."""

from __future__ import annotations

from typing import Any, Optional, TypedDict

from .envelope import is_json_integer, load_key


class EndpointHealth(TypedDict):
    state: str
    #: Why it is disabled, or what is failing; None when healthy.
    reason: Optional[str]
    lastSuccessAt: Optional[str]
    lastFailureAt: Optional[str]


class Endpoint(TypedDict):
    endpointId: int
    enterpriseId: int
    url: str
    eventTypes: list[str]
    description: str
    enabled: bool
    #: Deliveries a second at most; None: no limit.
    maxPerSecond: Optional[int]
    createdAt: str
    health: EndpointHealth
    #: Its deliveries pending, held, or queued behind an earlier event of their recording.
    waiting: int


class EndpointList(TypedDict):
    items: list[Endpoint]


class RemovedEndpoint(TypedDict):
    endpointId: int
    #: Its deliveries not yet confirmed, now cancelled.
    cancelled: int


class CheckItem(TypedDict):
    id: str
    #: "failure" (decides ``passed``) or "warning" (reported only).
    severity: str
    passed: bool
    expected: str
    evidence: str


class ReceiverCheckReport(TypedDict):
    url: str
    enterpriseId: int
    keyVersion: int
    passed: bool
    items: list[CheckItem]


class Attempt(TypedDict):
    startedAt: str
    durationMs: int
    #: None when no answer came.
    httpStatus: Optional[int]
    #: The first 4 KiB of the receiver's answer, or None.
    answer: Optional[str]


class Delivery(TypedDict):
    deliveryId: int
    endpointId: Optional[int]
    eventId: str
    eventType: str
    audioId: str
    state: str
    createdAt: str
    attempts: list[Attempt]


class DeliveryPage(TypedDict):
    items: list[Delivery]
    #: Where the next page starts; None when there is none.
    nextCursor: Optional[str]
    hasMore: bool


class Replayed(TypedDict):
    replayed: int


class Levels(TypedDict):
    """The window's delivery service levels; a figure is None when the window has no data for it."""

    firstAttemptP50Ms: Optional[float]
    firstAttemptP95Ms: Optional[float]
    #: The share of deliveries acknowledged at their first attempt, 0 to 1.
    firstAttemptAckShare: Optional[float]
    ackToReceiptP95Ms: Optional[float]
    #: Deliveries pending, held, queued or in flight now.
    backlog: int


class RotatedKey(TypedDict):
    keyVersion: int
    #: Shown this once: store it. The client already uses it.
    secret: str


class PortalLink(TypedDict):
    url: str
    expiresAt: str


def _require(value: Any, name: str, ok: bool) -> None:
    if not ok:
        raise ValueError(f"{name} is {value!r}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_optional_string(value: Any) -> bool:
    return value is None or isinstance(value, str)


def check_endpoint(endpoint: dict) -> None:
    _require(endpoint["endpointId"], "endpointId", is_json_integer(endpoint["endpointId"]))
    _require(endpoint["url"], "url", isinstance(endpoint["url"], str))
    _require(endpoint["eventTypes"], "eventTypes", isinstance(endpoint["eventTypes"], list))
    _require(endpoint["enabled"], "enabled", isinstance(endpoint["enabled"], bool))
    limit = endpoint["maxPerSecond"]
    _require(limit, "maxPerSecond", limit is None or is_json_integer(limit))
    _require(endpoint["health"], "health", isinstance(endpoint["health"], dict))


def check_endpoint_list(answer: dict) -> None:
    _require(answer["items"], "items", isinstance(answer["items"], list))
    for endpoint in answer["items"]:
        check_endpoint(endpoint)


def check_removed_endpoint(answer: dict) -> None:
    for name in ("endpointId", "cancelled"):
        _require(answer[name], name, is_json_integer(answer[name]))


def check_report(report: dict) -> None:
    _require(report["passed"], "passed", isinstance(report["passed"], bool))
    _require(report["items"], "items", isinstance(report["items"], list))
    for item in report["items"]:
        _require(item["id"], "an item's id", isinstance(item["id"], str))
        _require(item["passed"], "an item's passed", isinstance(item["passed"], bool))


def check_delivery_page(page: dict) -> None:
    _require(page["items"], "items", isinstance(page["items"], list))
    _require(page["hasMore"], "hasMore", isinstance(page["hasMore"], bool))
    _require(page["nextCursor"], "nextCursor", _is_optional_string(page["nextCursor"]))
    for delivery in page["items"]:
        _require(delivery["deliveryId"], "deliveryId", is_json_integer(delivery["deliveryId"]))
        _require(delivery["state"], "state", isinstance(delivery["state"], str))
        _require(delivery["attempts"], "attempts", isinstance(delivery["attempts"], list))
        for attempt in delivery["attempts"]:
            _require(attempt["answer"], "an attempt's answer", _is_optional_string(attempt["answer"]))


def check_replayed(answer: dict) -> None:
    _require(answer["replayed"], "replayed", is_json_integer(answer["replayed"]))


def check_levels(levels: dict) -> None:
    for name in ("firstAttemptP50Ms", "firstAttemptP95Ms", "firstAttemptAckShare", "ackToReceiptP95Ms"):
        _require(levels[name], name, levels[name] is None or _is_number(levels[name]))
    _require(levels["backlog"], "backlog", is_json_integer(levels["backlog"]))


def check_rotated_key(answer: dict) -> None:
    version = answer["keyVersion"]
    _require(version, "keyVersion", is_json_integer(version) and 1 <= version <= 2**31 - 1)
    load_key(answer["secret"])  # an InvalidSecretError (a ValueError) never echoes it


def check_portal_link(answer: dict) -> None:
    for name in ("url", "expiresAt"):
        _require(answer[name], name, isinstance(answer[name], str) and bool(answer[name]))
