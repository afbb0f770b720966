"""Downloading a recording's audio from its ``denoiseUrl``: streamed to a ``.part`` file and hashed on
the way, resumed where a cut connection left it, verified against the link's ``Repr-Digest``, then
renamed into place. ``download_from_link`` takes a function giving a fresh link, for a link that expired.
"""

from __future__ import annotations

import http.client
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .errors import (
    NOT_FOUND,
    EarshotError,
    EarshotNetworkError,
    EarshotNoAudioError,
    EarshotResponseError,
)
from .media_headers import (
    content_length_of,
    content_range_of,
    content_type_of,
    repr_digest_of,
    strong_etag_of,
)
from .partial_file import DownloadedAudio, PartFile, remove_partial
from .replies import backoff_seconds, is_retryable, read_reply

_CHUNK_SIZE = 64 * 1024

#: Called after each chunk written with the bytes of the file so far and its size, once the link said it.
Progress = Callable[[int, Optional[int]], None]


@dataclass
class LinkSettings:
    """How a download asks for its bytes: ``fresh_link()`` gives a new link to the same audio."""

    fresh_link: Callable[[], str]
    opener: urllib.request.OpenerDirector
    #: Seconds a request may wait for the next bytes before the attempt is abandoned (and resumed).
    timeout: float
    retries: int
    sleep: Callable[[float], None]
    on_progress: Optional[Progress] = None


@dataclass
class _Transfer:
    """A download's state across its attempts, besides the bytes in its part file."""

    link: str
    #: A 403 is answered by asking for a fresh link: once, and again only after bytes arrived.
    may_renew_link: bool = True
    total: Optional[int] = None
    digest: Optional[bytes] = None
    content_type: str = "application/octet-stream"
    resumed: int = 0


def audio_link_of(query_audios: Callable[[dict], dict], audio_id: str) -> str:
    """The recording's ``denoiseUrl`` as a query answers it now: EarshotError 4040 when the query does
    not have the recording, EarshotNoAudioError when it has no audio part."""
    page = query_audios({"audioId": audio_id})
    item = next((each for each in page["items"] if each["audioId"] == audio_id), None)
    if item is None:
        message = f"the query has no recording {audio_id} (deleted, or not of your enterprise)"
        raise EarshotError(NOT_FOUND, message, http_status=404)
    link = item["data"].get("denoiseUrl")
    if not link:
        raise EarshotNoAudioError(audio_id)
    return link


def download_from_link(link: Optional[str], path: str, settings: LinkSettings) -> DownloadedAudio:
    """Downloads ``link`` (without one, a fresh link's) to ``path``, resuming from ``path + '.part'``
    while the ETag kept beside it still matches; when the audio is gone (404, 4040, no audio part) or
    does not match its digest, the part file is removed."""
    part: Optional[PartFile] = None
    try:
        transfer = _Transfer(_checked(link if link is not None else settings.fresh_link()))
        part = PartFile(path)
        _with_retries(lambda: _attempt(part, transfer, settings), settings)
    except BaseException as error:
        if part is not None:
            part.close()
        if _is_gone(error):
            remove_partial(path)
        raise
    sha256 = part.finish(transfer.digest)
    return DownloadedAudio(part.have, sha256, transfer.content_type, transfer.resumed, transfer.digest is not None)


def _checked(link: Any) -> str:
    if not isinstance(link, str) or not link.startswith(("http://", "https://")):
        raise EarshotResponseError(f"the audio link is not an http(s) URL: {link!r}", 200)
    return link


def _is_gone(error: BaseException) -> bool:
    """Refusals after which the audio will come neither from this link nor from a fresh one."""
    if isinstance(error, EarshotResponseError):
        return error.http_status == 404
    return isinstance(error, EarshotNoAudioError) or (isinstance(error, EarshotError) and error.code == NOT_FOUND)


def _with_retries(attempt: Callable[[], None], settings: LinkSettings) -> None:
    for failures in range(settings.retries + 1):
        try:
            return attempt()
        except EarshotError as error:
            # External links answer a plain 5xx too: another attempt may not meet it.
            transient = is_retryable(error) or (
                isinstance(error, EarshotResponseError) and (error.http_status or 0) >= 500
            )
            if failures == settings.retries or not transient:
                raise
            settings.sleep(backoff_seconds(failures, error.retry_after))


def _attempt(part: PartFile, transfer: _Transfer, settings: LinkSettings) -> None:
    """One request, and its body appended to the part file."""
    response = _open_response(part, transfer, settings)
    with response:
        _receive_body(part, transfer, response, settings)


def _open_response(part: PartFile, transfer: _Transfer, settings: LinkSettings) -> Any:
    """Requests what is missing until an answer has bytes to append: from the beginning when the link
    cannot go on from what is had, with a fresh link when it is refused with 403."""
    while True:
        response = _request(part, transfer.link, settings)
        status = response.getcode()
        if status == 200 or (status == 206 and _continues(part, response.headers)):
            _accept(part, transfer, response)
            return response
        if status in (206, 416) and part.have > 0:
            response.close()
            part.restart()
            continue
        refusal = _refusal_of(response, status)
        if status != 403 or not transfer.may_renew_link:
            raise refusal
        transfer.link = _checked(settings.fresh_link())
        transfer.may_renew_link = False


def _request(part: PartFile, link: str, settings: LinkSettings) -> Any:
    """The answer to a GET of the link, whatever its status (an HTTPError is an answer too)."""
    # Decoded content would not match the ranges and the digest, which are of the stored bytes.
    headers = {"Accept-Encoding": "identity"}
    if part.have > 0 and part.etag is not None:
        headers["Range"] = f"bytes={part.have}-"
        headers["If-Range"] = part.etag
    try:
        return settings.opener.open(urllib.request.Request(link, headers=headers), timeout=settings.timeout)
    except urllib.error.HTTPError as answer:
        return answer
    except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
        raise _network_error(error) from error


def _continues(part: PartFile, headers: Any) -> bool:
    """A 206 goes on exactly from the bytes had, of the same file."""
    content_range = content_range_of(headers)
    etag = strong_etag_of(headers)
    return content_range is not None and content_range[0] == part.have and etag in (None, part.etag)


def _accept(part: PartFile, transfer: _Transfer, response: Any) -> None:
    """Takes the answer's description of the file; a whole file (200) replaces the bytes had."""
    headers, partial = response.headers, response.getcode() == 206
    if not partial:
        part.restart()
    elif part.have > 0:
        transfer.resumed += 1
    etag = strong_etag_of(headers)
    if part.etag is None and etag is not None:
        part.keep_etag(etag)
    content_range = content_range_of(headers)
    transfer.total = content_range[2] if partial and content_range else content_length_of(headers)
    digest = repr_digest_of(headers, response.getcode())
    transfer.digest = digest if digest is not None or not partial else transfer.digest
    transfer.content_type = content_type_of(headers)


def _receive_body(part: PartFile, transfer: _Transfer, response: Any, settings: LinkSettings) -> None:
    while True:
        try:
            chunk = response.read(_CHUNK_SIZE)
        except (http.client.HTTPException, OSError) as error:
            raise _network_error(error) from error
        if not chunk:
            break
        part.append(chunk)
        transfer.may_renew_link = True
        if settings.on_progress is not None:
            settings.on_progress(part.have, transfer.total)
    # http.client ends a body cut short quietly: the count tells.
    if transfer.total is not None and part.have != transfer.total:
        raise EarshotNetworkError(f"the audio link's answer ended after {part.have} of {transfer.total} bytes")


def _refusal_of(response: Any, status: int) -> EarshotError:
    """The refusal a non-2xx answer carries: EarshotError for an Earshot body, else EarshotResponseError."""
    try:
        with response:
            raw = response.read()
    except (http.client.HTTPException, OSError) as error:
        return _network_error(error)
    try:
        read_reply(status, response.headers, raw)
    except EarshotError as error:
        return error
    return EarshotResponseError(f"the audio link answered HTTP {status}", status)


def _network_error(error: BaseException) -> EarshotNetworkError:
    reason = getattr(error, "reason", None) or error
    return EarshotNetworkError(f"the audio download failed: {reason!r}")
