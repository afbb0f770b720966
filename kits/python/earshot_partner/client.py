"""A client of the partner API: tokens, the query, the change feed, the receipt callback, and (from
SelfService) the partner's own endpoints, deliveries, levels, key and portal links."""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Optional, Union

from .audio_download import LinkSettings, Progress, audio_link_of, download_from_link
from .envelope import is_json_integer, load_key, open_envelope, seal
from .errors import (
    TOKEN_EXPIRED,
    UNAUTHORIZED,
    EarshotError,
    EarshotNetworkError,
    EarshotResponseError,
    EnvelopeError,
)
from .messages import check_changes_request, check_filter
from .partial_file import DownloadedAudio
from .replies import backoff_seconds, is_retryable, is_unacted, read_reply
from .self_service import AT_MOST_ONCE, SelfService

TOKEN_PATH = "/openapi/v1/token"
AUDIOS_PATH = "/openapi/v1/audios"
CHANGES_PATH = "/openapi/v1/audios/changes"
CALLBACK_PATH = "/openapi/v1/callback"
DEFAULT_BASE_URL = "http://127.0.0.1:8080"

MAX_ENTERPRISE_ID = 2**53 - 1
#: A token is renewed this long before it expires (or at half its life, when that is shorter).
RENEW_BEFORE_SECONDS = 300.0

Retryable = Callable[[EarshotError], bool]


@dataclass(frozen=True)
class _Token:
    value: str
    expires_in: int
    renew_at: float
    #: The keyVersion that sealed its request: after a key rotation, a token of the old one is renewed.
    key_version: int


@dataclass(frozen=True)
class _Credentials:
    key_version: int
    key: bytes


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer like any other: the platform never sends one."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None


class Client(SelfService):
    """Talks to the partner API under one enterprise's credentials.

    Every request is sealed afresh (a new nonce for every request and every retry), network errors,
    5000, 5030 and short 4290s are retried with backoff, and one token is shared by every thread until
    five minutes before it expires. Refusals raise EarshotError with the catalogue's ``code``.
    """

    def __init__(
        self,
        base_url: str,
        enterprise_id: int,
        key_version: int,
        secret: str,
        *,
        timeout: float = 10.0,
        retries: int = 3,
        opener: Optional[urllib.request.OpenerDirector] = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http:// or https:// URL")
        for name, value, high in (
            ("enterprise_id", enterprise_id, MAX_ENTERPRISE_ID),
            ("key_version", key_version, 2**31 - 1),
        ):
            if not is_json_integer(value) or not 1 <= value <= high:
                raise ValueError(f"{name} must be an integer from 1 to {high}")
        if not isinstance(retries, int) or not 0 <= retries <= 100:
            raise ValueError("retries must be an integer from 0 to 100")
        self.base_url = base_url.rstrip("/")
        self.enterprise_id = int(enterprise_id)
        self.timeout = timeout
        self.retries = retries
        # One object, replaced whole by a key rotation: a request seals and opens with one pair.
        self._credentials = _Credentials(int(key_version), load_key(secret))
        self._opener = opener or urllib.request.build_opener(_NoRedirects)
        # Audio links may be a storage's own, which redirect.
        self._media_opener = opener or urllib.request.build_opener()
        self._sleep = sleep
        self._clock = clock
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        self._token: Optional[_Token] = None
        self._token_flight: Optional[Future] = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ, **options: Any) -> "Client":
        """From EARSHOT_BASE_URL (default http://127.0.0.1:8080), EARSHOT_ENTERPRISE_ID,
        EARSHOT_KEY_VERSION (default 1) and EARSHOT_SECRET, as the Node kit's CLI reads them."""

        def integer(name: str, default: Optional[str] = None) -> int:
            text = environ.get(name) or default
            if text is None:
                raise ValueError(f"{name} is not set: set it to your enterprise's id")
            if not text.strip().isdigit():
                raise ValueError(f"{name} must be a positive integer, not {text!r}")
            return int(text)

        enterprise_id = integer("EARSHOT_ENTERPRISE_ID")
        if not environ.get("EARSHOT_SECRET"):
            raise ValueError("EARSHOT_SECRET is not set: set it to your enterprise's secret")
        return cls(
            base_url=environ.get("EARSHOT_BASE_URL") or DEFAULT_BASE_URL,
            enterprise_id=enterprise_id,
            key_version=integer("EARSHOT_KEY_VERSION", "1"),
            secret=environ["EARSHOT_SECRET"],
            **options,
        )

    @property
    def key_version(self) -> int:
        """The keyVersion requests are sealed with (the new one after ``rotate_key``)."""
        return self._credentials.key_version

    def token(self) -> str:
        """A bearer token: the cached one while fresh, else a new one (one request for all threads)."""
        with self._lock:
            cached = self._token
            fresh = cached is not None and self._clock() < cached.renew_at
            if cached is not None and fresh and cached.key_version == self._credentials.key_version:
                return cached.value
            flight = self._token_flight
            leader = flight is None
            if leader:
                flight = self._token_flight = Future()
        assert flight is not None
        if leader:
            self._fly(flight)
        return flight.result().value

    def query_audios(self, filter: Optional[Mapping[str, Any]] = None) -> dict:
        """One page of recordings: ``{specVersion, page, size, total, items: [{audioId, data}]}``."""
        plaintext = check_filter(filter or {})
        return self._sealed_call(AUDIOS_PATH, plaintext, _check_recording_page, "query")

    def iterate_audios(self, filter: Optional[Mapping[str, Any]] = None) -> Iterator[dict]:
        """Every page from ``filter['page']`` (default 1) until all ``total`` recordings were seen."""
        query = check_filter(filter or {})
        page_number = query.get("page", 1)
        while True:
            page = self.query_audios({**query, "page": page_number})
            yield page
            if not page["items"] or page["page"] * page["size"] >= page["total"]:
                return
            page_number = page["page"] + 1

    def changes(self, cursor: Optional[str] = None, size: Optional[int] = None) -> dict:
        """One page of the change feed: ``{specVersion, items, nextCursor, hasMore, lagSeconds}``."""
        plaintext = check_changes_request(cursor, size)
        return self._sealed_call(CHANGES_PATH, plaintext, _check_change_page, "change feed")

    def iterate_changes(self, cursor: Optional[str] = None, size: Optional[int] = None) -> Iterator[dict]:
        """Every page from ``cursor`` (the beginning without one), following nextCursor until caught up.

        The last page's ``nextCursor`` is where later changes will start: store it.
        """
        while True:
            page = self.changes(cursor, size)
            yield page
            if not page["hasMore"]:
                return
            cursor = page["nextCursor"]

    def confirm_receipt(self, audio_id: str, erased: bool = False) -> None:
        """The receipt callback of a pushed recording; repeating it is harmless. With ``erased``, the
        confirmation that the partner erased the deleted recording instead (``confirm_erasure``)."""
        if not isinstance(audio_id, str) or not 1 <= len(audio_id) <= 128:
            raise EarshotError(4001, "audioId: must be a non-empty string of at most 128 characters")
        plaintext = {"audioId": audio_id, "erased": True} if erased else {"audioId": audio_id}
        self._authorized(CALLBACK_PATH, str(uuid.uuid4()), plaintext)

    def confirm_erasure(self, audio_id: str) -> None:
        """Confirms that the partner erased the deleted recording: removed it and its audio from its store."""
        self.confirm_receipt(audio_id, erased=True)

    def download_audio(self, audio_id: str, path: Union[str, "os.PathLike[str]"], *,
                       on_progress: Optional[Progress] = None) -> DownloadedAudio:
        """Downloads the recording's audio (its ``denoiseUrl``, as a query answers it now) to ``path``.

        Streamed to ``path + '.part'``, resumed where a cut connection left it, verified against the
        link's Repr-Digest, then synced and renamed to ``path``. ``on_progress(bytes, total)`` is called
        after each chunk written. Raises EarshotError 4040 when the recording is gone (the part file is
        removed), EarshotNoAudioError when it has no audio, EarshotDigestMismatchError on a mismatch.
        """
        settings = LinkSettings(
            fresh_link=lambda: audio_link_of(self.query_audios, audio_id),
            opener=self._media_opener,
            timeout=self.timeout,
            retries=self.retries,
            sleep=self._sleep,
            on_progress=on_progress,
        )
        return download_from_link(None, os.fspath(path), settings)

    # Tokens

    def _fly(self, flight: Future) -> None:
        """The one token request of a flight; its result (or error) goes to every waiting thread."""
        try:
            token = self._request_token()
        except BaseException as error:
            with self._lock:
                self._token_flight = None
            flight.set_exception(error)
            return
        with self._lock:
            self._token = token
            self._token_flight = None
        flight.set_result(token)

    def _request_token(self) -> _Token:
        event_id = f"token-{uuid.uuid4()}"
        requested_at = self._clock()
        credentials = self._credentials

        def body() -> dict:
            envelope = self._seal(credentials, event_id, {})
            return {**envelope, "enterpriseId": self.enterprise_id}

        data, status = self._with_retries(lambda: self._post(TOKEN_PATH, body(), None))
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("accessToken"), str)
            or not data["accessToken"]
            or not is_json_integer(data.get("expiresIn"))
            or data["expiresIn"] < 1
        ):
            raise EarshotResponseError("the token answer's data is not {accessToken, expiresIn}", status)
        lifetime = float(data["expiresIn"])
        renew_at = requested_at + lifetime - min(RENEW_BEFORE_SECONDS, lifetime / 2)
        return _Token(data["accessToken"], int(data["expiresIn"]), renew_at, credentials.key_version)

    def _drop_token(self, refused: str) -> None:
        with self._lock:
            # Another thread may have replaced it already: only the refused token goes.
            if self._token is not None and self._token.value == refused:
                self._token = None

    def _switch_key(self, key_version: int, secret: str) -> None:
        """From now on requests are sealed with this key, and the next one gets a token of its own."""
        credentials = _Credentials(key_version, load_key(secret))
        with self._lock:
            # Two rotations at once: the later keyVersion wins, whichever answer came last.
            if key_version > self._credentials.key_version:
                self._credentials = credentials

    # Requests

    def _sealed_call(self, path: str, plaintext: dict, check: Callable[[dict], None], what: str, *,
                     timeout: Optional[float] = None) -> dict:
        """A sealed request and its sealed answer, opened and checked. A call in AT_MOST_ONCE is resent
        only when the refusal shows the platform did not act on it."""
        event_id = str(uuid.uuid4())
        credentials = self._credentials
        retryable = is_unacted if path in AT_MOST_ONCE else is_retryable
        data, status = self._authorized(path, event_id, plaintext, credentials, timeout, retryable)
        try:
            opened = open_envelope(data, credentials.key)
        except EnvelopeError as error:
            raise EarshotResponseError(f"the {what} answer's data does not open: {error.msg}", status) from None
        envelope = opened.envelope
        if envelope["eventId"] != event_id or envelope["keyVersion"] != credentials.key_version:
            raise EarshotResponseError(f"the {what} answer's data answers another request", status)
        try:
            check(opened.plaintext)
        except (KeyError, TypeError, ValueError) as error:
            message = f"the {what} answer's data is not what it should be: {error!r}"
            raise EarshotResponseError(message, status) from None
        return opened.plaintext

    def _seal(self, credentials: _Credentials, event_id: str, plaintext: Mapping[str, Any]) -> dict:
        """Sealed now, with issuedAt (epoch seconds): replayed past the platform's max age, it is refused."""
        issued_at = int(self._wall_clock())
        return seal(credentials.key, credentials.key_version, event_id, {**plaintext, "issuedAt": issued_at})

    def _authorized(self, path: str, event_id: str, plaintext: dict, credentials: Optional[_Credentials] = None,
                    timeout: Optional[float] = None, retryable: Retryable = is_retryable) -> tuple[Any, int]:
        """A bearer request; refused with 4010 or 4011 it is sent once more with a new token."""
        sealing = credentials or self._credentials

        def send(token: str) -> tuple[Any, int]:
            return self._with_retries(
                lambda: self._post(path, self._seal(sealing, event_id, plaintext), token, timeout),
                retryable,
            )

        token = self.token()
        try:
            return send(token)
        except EarshotError as error:
            if error.code not in (UNAUTHORIZED, TOKEN_EXPIRED):
                raise
            self._drop_token(token)
            return send(self.token())

    def _with_retries(self, attempt: Callable[[], tuple[Any, int]],
                      retryable: Retryable = is_retryable) -> tuple[Any, int]:
        for failures in range(self.retries + 1):
            try:
                return attempt()
            except EarshotError as error:
                if failures == self.retries or not retryable(error):
                    raise
                self._sleep(backoff_seconds(failures, error.retry_after))
        raise AssertionError("unreachable")

    def _post(self, path: str, body: dict, token: Optional[str], timeout: Optional[float] = None) -> tuple[Any, int]:
        """One HTTP attempt; the answer's data on 2000, else the refusal raised."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(
            self.base_url + path, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
        )
        try:
            try:
                with self._opener.open(request, timeout=timeout or self.timeout) as response:
                    return read_reply(response.status, response.headers, response.read())
            except urllib.error.HTTPError as refusal:
                with refusal:
                    return read_reply(refusal.code, refusal.headers, refusal.read())
        except EarshotError:
            raise
        except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
            reason = getattr(error, "reason", None) or error
            raise EarshotNetworkError(f"cannot reach the platform at {self.base_url}: {reason}") from error


def _check_recording_page(page: dict) -> None:
    for name in ("page", "size", "total"):
        if not is_json_integer(page[name]):
            raise ValueError(f"{name} is not an integer")
    if not isinstance(page["items"], list):
        raise ValueError("items is not a list")
    for item in page["items"]:
        if not isinstance(item["audioId"], str) or not isinstance(item["data"], dict):
            raise ValueError("an item is not {audioId, data}")


def _check_change_page(page: dict) -> None:
    if not isinstance(page["items"], list) or not isinstance(page["hasMore"], bool):
        raise ValueError("items or hasMore missing")
    if not isinstance(page["nextCursor"], str):
        raise ValueError("nextCursor is not a string")
    page.setdefault("lagSeconds", 0)
