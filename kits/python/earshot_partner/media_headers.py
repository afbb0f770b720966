"""What the headers of an audio link's answer say, as a download needs them."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Optional

from .errors import EarshotResponseError

_CONTENT_RANGE = re.compile(r"bytes (\d{1,15})-(\d{1,15})/(\d{1,15})")
_STRONG_ETAG = re.compile(r'"[\x21\x23-\x7e]*"')
_SHA_256_MEMBER = re.compile(r"\s*sha-256\s*=\s*:([^:]*):\s*", re.IGNORECASE)


def content_range_of(headers: Any) -> Optional[tuple[int, int, int]]:
    """``Content-Range: bytes START-END/TOTAL`` of a 206 as (start, end, total); None otherwise."""
    match = _CONTENT_RANGE.fullmatch((headers.get("Content-Range") or "").strip())
    if not match:
        return None
    start, end, total = (int(each) for each in match.groups())
    return (start, end, total) if start <= end < total else None


def content_length_of(headers: Any) -> Optional[int]:
    value = (headers.get("Content-Length") or "").strip()
    return int(value) if value.isdigit() and len(value) <= 15 else None


def content_type_of(headers: Any) -> str:
    """The media type without its parameters, lower case; application/octet-stream when not stated."""
    media_type = (headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
    return media_type or "application/octet-stream"


def strong_etag_of(headers: Any) -> Optional[str]:
    """A strong ETag, the only kind If-Range may carry; None for none or a weak one (W/"...")."""
    etag = (headers.get("ETag") or "").strip()
    return etag if _STRONG_ETAG.fullmatch(etag) else None


def repr_digest_of(headers: Any, status: int) -> Optional[bytes]:
    """The SHA-256 of the whole file that ``Repr-Digest`` (RFC 9530) states, on a 206 as on a 200;
    None when it states none. A sha-256 that is not 32 bytes of Base64 is refused, never ignored."""
    header = headers.get("Repr-Digest")
    if header is None:
        return None
    members = (_SHA_256_MEMBER.fullmatch(each) for each in header.split(","))
    member = next((each for each in members if each), None)
    if member is None:
        return None
    encoded = member.group(1)
    try:
        digest = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        digest = b""
    if len(digest) != 32 or base64.b64encode(digest).decode("ascii") != encoded:
        raise EarshotResponseError(f"the audio link's Repr-Digest states a malformed sha-256: {encoded}", status)
    return digest
