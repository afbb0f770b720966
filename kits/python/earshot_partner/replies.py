"""Reading the platform's answers, and which failures are retried after how long."""

from __future__ import annotations

import random
from typing import Any, Optional

from .envelope import is_json_failure, is_json_integer, parse_json
from .errors import (
    INTERNAL_ERROR,
    OK,
    RATE_LIMITED,
    UNAVAILABLE,
    EarshotError,
    EarshotNetworkError,
    EarshotResponseError,
    default_message,
)

#: A 4290 asking to wait longer than this is not retried: the caller decides.
MAX_RETRY_AFTER_SECONDS = 60.0
BACKOFF_FIRST_SECONDS = 0.25
BACKOFF_MAX_SECONDS = 5.0


def backoff_seconds(failures: int, retry_after: Optional[float]) -> float:
    """The pause after ``failures + 1`` failed attempts: 0.25 s doubling to 5 s, jittered, or the
    answer's Retry-After when longer."""
    backoff = min(BACKOFF_MAX_SECONDS, BACKOFF_FIRST_SECONDS * 2**failures)
    return max(backoff * random.uniform(1.0, 2.0), retry_after or 0.0)


def read_reply(status: int, headers: Any, raw: bytes) -> tuple[Any, int]:
    """The data of an answer with code 2000; any other code raised as EarshotError."""
    try:
        body = parse_json(raw.decode("utf-8"))
    except UnicodeDecodeError:
        body = None
    code = body.get("code") if isinstance(body, dict) else None
    if is_json_failure(body) or not is_json_integer(code):
        raise EarshotResponseError(
            f"the platform answered HTTP {status} without an Earshot JSON body ({{code, msg}})", status
        )
    if code == OK:
        return body.get("data"), status
    msg = body.get("msg") if isinstance(body.get("msg"), str) and body.get("msg") else default_message(code)
    request_id = body.get("requestId")
    raise EarshotError(
        int(code),
        msg,
        request_id=request_id if isinstance(request_id, str) else headers.get("X-Request-Id"),
        http_status=status,
        retry_after=_retry_after(headers.get("Retry-After")),
    )


def _retry_after(header: Optional[str]) -> Optional[float]:
    text = (header or "").strip()
    return float(text) if text.isdigit() and len(text) <= 9 else None


def is_retryable(error: EarshotError) -> bool:
    """A failure a later attempt may not meet: no connection, 5000, 5030, a short 4290, a gateway's 50x."""
    if isinstance(error, EarshotNetworkError):
        return True
    if isinstance(error, EarshotResponseError):
        return error.http_status in (502, 503, 504)
    if error.code == RATE_LIMITED:
        return (error.retry_after or 0.0) <= MAX_RETRY_AFTER_SECONDS
    return error.code in (INTERNAL_ERROR, UNAVAILABLE)


def is_unacted(error: EarshotError) -> bool:
    """A retryable failure that shows the request was not acted on: a connection refused (nothing was
    sent), 5030, or a short 4290. After a timeout, a cut connection or a 5000 it may have been."""
    if isinstance(error, EarshotNetworkError):
        return isinstance(getattr(error.__cause__, "reason", error.__cause__), ConnectionRefusedError)
    if error.code == RATE_LIMITED:
        return (error.retry_after or 0.0) <= MAX_RETRY_AFTER_SECONDS
    return error.code == UNAVAILABLE
