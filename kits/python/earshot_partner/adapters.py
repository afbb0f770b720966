"""The receiver served as a WSGI or an ASGI application, without any framework.

Both send the answer first and release the receipt callback only once it was sent: WSGI when the
server closes the response iterable (PEP 3333: after the last byte was written), ASGI once
``http.response.body`` was sent.
"""

from __future__ import annotations

import asyncio
import functools
from http import HTTPStatus
from typing import Any, Awaitable, Callable, Iterable, Iterator, Optional

from .errors import INVALID_REQUEST, NOT_FOUND, PAYLOAD_TOO_LARGE, http_status_of
from .receiver import DEFAULT_PUSH_PATH, PushAnswer, Receiver, answer

WsgiApp = Callable[[dict, Callable[..., Any]], Iterable[bytes]]
AsgiApp = Callable[[dict, Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]], Awaitable[None]]

_JSON_HEADERS = [("Content-Type", "application/json; charset=utf-8")]


class _AnsweredBody:
    """The response iterable: its close() (called by the server once the answer was sent) releases."""

    def __init__(self, pushed: PushAnswer) -> None:
        self._answer = pushed

    def __iter__(self) -> Iterator[bytes]:
        yield self._answer.body

    def close(self) -> None:
        self._answer.after_response()


def wsgi_app(receiver: Receiver, path: Optional[str] = DEFAULT_PUSH_PATH) -> WsgiApp:
    """A WSGI application receiving pushes on POST ``path`` (any path when None)."""

    def application(environ: dict, start_response: Callable[..., Any]) -> Iterable[bytes]:
        pushed = _wsgi_answer(receiver, path, environ)
        headers = _JSON_HEADERS + [("Content-Length", str(len(pushed.body)))]
        if pushed.status == http_status_of(PAYLOAD_TOO_LARGE):
            headers.append(("Connection", "close"))
        start_response(_status_line(pushed.status), headers)
        return _AnsweredBody(pushed)

    return application


def _wsgi_answer(receiver: Receiver, path: Optional[str], environ: dict) -> PushAnswer:
    if path is not None and environ.get("PATH_INFO", "") != path:
        return answer(NOT_FOUND, "no such path")
    if environ.get("REQUEST_METHOD") != "POST":
        return answer(INVALID_REQUEST, "use POST")
    body = _read_wsgi_body(environ, receiver.body_limit)
    if body is None:
        return answer(PAYLOAD_TOO_LARGE, f"the body is over {receiver.body_limit} bytes")
    headers = {key[5:].replace("_", "-"): value for key, value in environ.items() if key.startswith("HTTP_")}
    if "CONTENT_TYPE" in environ:
        headers["Content-Type"] = environ["CONTENT_TYPE"]
    return receiver.handle_push(body, headers)


def _read_wsgi_body(environ: dict, limit: int) -> Optional[bytes]:
    """The body, or None when it is over the limit. Without a Content-Length it is read to its end
    only where the server says the input ends there (wsgi.input_terminated: gunicorn, chunked)."""
    stream = environ["wsgi.input"]
    declared = (environ.get("CONTENT_LENGTH") or "").strip()
    if not declared:
        body = stream.read(limit + 1) if environ.get("wsgi.input_terminated") else b""
        return body if len(body) <= limit else None
    length = int(declared) if declared.isdigit() else 0
    return stream.read(length) if length <= limit else None


def asgi_app(receiver: Receiver, path: Optional[str] = DEFAULT_PUSH_PATH) -> AsgiApp:
    """An ASGI application receiving pushes on POST ``path`` (any path when None).

    The receiver's work (sqlite, your on_event) runs in the loop's default executor, never on the loop.
    """

    async def application(scope: dict, receive: Callable[[], Awaitable[dict]],
                          send: Callable[[dict], Awaitable[None]]) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        pushed = await _asgi_answer(receiver, path, scope, receive)
        headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in _JSON_HEADERS]
        headers.append((b"content-length", str(len(pushed.body)).encode("ascii")))
        await send({"type": "http.response.start", "status": pushed.status, "headers": headers})
        await send({"type": "http.response.body", "body": pushed.body})
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, pushed.after_response)

    return application


async def _asgi_answer(
    receiver: Receiver, path: Optional[str], scope: dict, receive: Callable[[], Awaitable[dict]]
) -> PushAnswer:
    if path is not None and scope.get("path") != path:
        return answer(NOT_FOUND, "no such path")
    if scope.get("method") != "POST":
        return answer(INVALID_REQUEST, "use POST")
    body = await _read_body(receive, receiver.body_limit)
    if body is None:
        return answer(PAYLOAD_TOO_LARGE, f"the body is over {receiver.body_limit} bytes")
    loop = asyncio.get_running_loop()
    handle = functools.partial(receiver.handle_push, body, scope.get("headers", []))
    return await loop.run_in_executor(None, handle)


async def _read_body(receive: Callable[[], Awaitable[dict]], limit: int) -> Optional[bytes]:
    """The whole body, or None once it is over the limit."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ConnectionError("the client went away")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _lifespan(receive: Callable[[], Awaitable[dict]], send: Callable[[dict], Awaitable[None]]) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def _status_line(status: int) -> str:
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"{status} Unknown"
