"""The partner's own integration through the partner API: its endpoints, its deliveries and their
replay, the receiver check, its service levels, its key and links into the portal. Mixed into Client:
each call is sealed and answered sealed like the query, with the same token, retries and errors."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Optional

from .self_service_answers import (
    DeliveryPage,
    Endpoint,
    EndpointList,
    Levels,
    PortalLink,
    ReceiverCheckReport,
    RemovedEndpoint,
    Replayed,
    RotatedKey,
    check_delivery_page,
    check_endpoint,
    check_endpoint_list,
    check_levels,
    check_portal_link,
    check_removed_endpoint,
    check_replayed,
    check_report,
    check_rotated_key,
)
from .self_service_requests import (
    ACCESS,
    REPLAY_STATES,
    UNSET,
    WINDOWS,
    Instant,
    MAX_CALLBACK_SECONDS,
    check_id,
    check_range,
    choice,
    deliveries_filter,
    endpoint_fields,
    replay_since_request,
)

ENDPOINTS_LIST_PATH = "/openapi/v1/endpoints/list"
ENDPOINTS_ADD_PATH = "/openapi/v1/endpoints/add"
ENDPOINTS_UPDATE_PATH = "/openapi/v1/endpoints/update"
ENDPOINTS_REMOVE_PATH = "/openapi/v1/endpoints/remove"
ENDPOINTS_CHECK_PATH = "/openapi/v1/endpoints/check"
DELIVERIES_LIST_PATH = "/openapi/v1/deliveries/list"
DELIVERIES_REPLAY_PATH = "/openapi/v1/deliveries/replay"
LEVELS_PATH = "/openapi/v1/levels"
KEY_ROTATE_PATH = "/openapi/v1/key/rotate"
PORTAL_LINK_PATH = "/openapi/v1/portal/link"

#: The receiver check pushes a series, then waits up to 60 s for the receipt callbacks: its answer can take
#: minutes (the Node and Go kits wait 3 minutes too).
CHECK_TIMEOUT_SECONDS = 180.0

#: The calls a second copy of would act twice (another endpoint, removal, check, replay or rotation; a
#: resend is sealed with a fresh nonce, so the platform's replay guard does not stop it): resent only after
#: a refusal that shows nothing was done (``replies.is_unacted``). The contract's ``atMostOnce`` operations.
AT_MOST_ONCE = frozenset({
    ENDPOINTS_ADD_PATH,
    ENDPOINTS_REMOVE_PATH,
    ENDPOINTS_CHECK_PATH,
    DELIVERIES_REPLAY_PATH,
    KEY_ROTATE_PATH,
})


class SelfService:
    """The self-service calls of Client (see its docstring for tokens, retries and errors)."""

    _sealed_call: Callable[..., dict]
    _switch_key: Callable[[int, str], None]

    # Endpoints

    def list_endpoints(self) -> EndpointList:
        """``{items: [Endpoint]}``: every endpoint of the enterprise with its URL's health."""
        return self._sealed_call(ENDPOINTS_LIST_PATH, {}, check_endpoint_list, "endpoint list")

    def add_endpoint(self, url: str, *, event_types: Optional[Iterable[str]] = None,
                     description: Any = UNSET, max_per_second: Any = UNSET) -> Endpoint:
        """A new endpoint: pushed every event type unless ``event_types`` names some
        (``recording.transcript_ready``, or short, ``transcript_ready``); ``max_per_second`` None: no limit.

        Not resent after a failure that may have added it (a timeout, a 5000): list to see.
        """
        fields = endpoint_fields(url, UNSET if event_types is None else event_types, description,
                                 max_per_second)
        return self._sealed_call(ENDPOINTS_ADD_PATH, fields, check_endpoint, "new endpoint")

    def update_endpoint(self, endpoint_id: int, *, url: Any = UNSET, event_types: Any = UNSET,
                        description: Any = UNSET, max_per_second: Any = UNSET, enabled: Any = UNSET) -> Endpoint:
        """Changes the fields given and leaves the others; ``max_per_second=None`` lifts the limit and
        ``enabled=False`` holds its deliveries until it is enabled again. 4040 for an unknown endpoint."""
        plaintext = {"endpointId": check_id(endpoint_id, "endpointId"),
                     **endpoint_fields(url, event_types, description, max_per_second, enabled)}
        return self._sealed_call(ENDPOINTS_UPDATE_PATH, plaintext, check_endpoint, "updated endpoint")

    def remove_endpoint(self, endpoint_id: int) -> RemovedEndpoint:
        """``{endpointId, cancelled}``: removed, with its deliveries not yet confirmed cancelled.

        Not resent after a failure that may have removed it (a resend would answer 4040).
        """
        plaintext = {"endpointId": check_id(endpoint_id, "endpointId")}
        return self._sealed_call(ENDPOINTS_REMOVE_PATH, plaintext, check_removed_endpoint, "removed endpoint")

    def check_receiver(self, url: str, *, callback_within_seconds: Optional[int] = None,
                       timeout: float = CHECK_TIMEOUT_SECONDS) -> ReceiverCheckReport:
        """The receiver check on ``url``: scripted pushes sealed with the enterprise's current key
        (marked as a check, storing nothing in a receiver that follows the protocol) and a report of
        each item. Each receipt callback is awaited up to ``callback_within_seconds`` (1 to 60, the
        platform's default 60); the report, up to ``timeout`` seconds. Not resent after a failure that
        may have run it (a timeout, a 5000)."""
        plaintext = endpoint_fields(url)
        if callback_within_seconds is not None:
            plaintext["callbackWithinSeconds"] = check_range(callback_within_seconds, "callbackWithinSeconds",
                                                             1, MAX_CALLBACK_SECONDS)
        return self._sealed_call(ENDPOINTS_CHECK_PATH, plaintext, check_report, "receiver check", timeout=timeout)

    # Deliveries

    def list_deliveries(self, *, state: Optional[str] = None, event_type: Optional[str] = None,
                        audio_id: Optional[str] = None, since: Optional[Instant] = None,
                        until: Optional[Instant] = None, cursor: Optional[str] = None,
                        size: Optional[int] = None) -> DeliveryPage:
        """One page of deliveries, ``{items: [Delivery], nextCursor, hasMore}``, each with its attempts
        (time, duration, HTTP status and the first 4 KiB of the receiver's answer). ``since`` (inclusive)
        and ``until`` (exclusive) bound their creation: ISO 8601 strings or aware datetimes."""
        plaintext = deliveries_filter(state, event_type, audio_id, since, until, cursor, size)
        return self._sealed_call(DELIVERIES_LIST_PATH, plaintext, check_delivery_page, "delivery list")

    def iterate_deliveries(self, **filters: Any) -> Iterator[DeliveryPage]:
        """Every page of ``list_deliveries(**filters)``, following nextCursor while hasMore."""
        while True:
            page = self.list_deliveries(**filters)
            yield page
            if not page["hasMore"] or page["nextCursor"] is None:
                return
            filters["cursor"] = page["nextCursor"]

    def replay_delivery(self, delivery_id: int) -> Replayed:
        """Pushes the delivery again (same eventId: a receiver dedups it). 4040 for an unknown one. Not
        resent after a failure that may have replayed it (a timeout, a 5000): list the deliveries to see."""
        plaintext = {"deliveryId": check_id(delivery_id, "deliveryId")}
        return self._sealed_call(DELIVERIES_REPLAY_PATH, plaintext, check_replayed, "replay")

    def replay_since(self, since: Instant, states: Iterable[str] = REPLAY_STATES) -> Replayed:
        """Pushes again every delivery in ``states`` (default failed and unconfirmed) created at or
        after ``since``; ``{replayed}`` counts them. Not resent after a failure that may have replayed them."""
        plaintext = replay_since_request(since, states)
        return self._sealed_call(DELIVERIES_REPLAY_PATH, plaintext, check_replayed, "replay")

    # Levels, key, portal

    def levels(self, window: str = "24h") -> Levels:
        """The delivery service levels of the last ``window`` ("24h" or "7d"); figures may lag 10 s."""
        plaintext = {"window": choice(window, "window", WINDOWS)}
        return self._sealed_call(LEVELS_PATH, plaintext, check_levels, "levels")

    def rotate_key(self) -> RotatedKey:
        """A new key, ``{keyVersion, secret}`` (the answer is sealed with the old one). From then on this
        client seals with the new key and fetches its tokens with it; the old key keeps working for the
        platform's grace, so update the other holders of the secret within it. Not resent after a
        failure that may have rotated it."""
        rotated = self._sealed_call(KEY_ROTATE_PATH, {}, check_rotated_key, "key rotation")
        self._switch_key(rotated["keyVersion"], rotated["secret"])
        return rotated

    def portal_link(self, access: Optional[str] = None) -> PortalLink:
        """``{url, expiresAt}``: a one-time link into the portal, for a ``view`` session (the
        default) or a ``manage`` one."""
        plaintext = {} if access is None else {"access": choice(access, "access", ACCESS)}
        return self._sealed_call(PORTAL_LINK_PATH, plaintext, check_portal_link, "portal link")

