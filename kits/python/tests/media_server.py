"""A loopback stand-in for the links of stored audio, as the platform's media route answers them
(ETag, Repr-Digest, Range with If-Range, 403 4030 for an expired link, 404 4040 for a removed file),
scripted to cut an answer part-way, expire the links given so far, or state a wrong digest."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional


class MediaServer:
    """Serves ``put`` files at ``link(id)``, a new link each call. ``requests`` records each GET as
    ``{id, link, range, if_range, status}``."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes, bool]] = {}
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.links_given = 0
        self.expired_up_to = 0
        self.cut_after: Optional[int] = None
        self.expire_on_cut = False
        self.lie_about_digest = False
        media = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                media.answer(self)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def put(self, audio_id: str, body: bytes, plain: bool = False) -> None:
        """A file; a plain one is served as a storage that is not Earshot's: no ETag, no Repr-Digest."""
        with self.lock:
            self.files[audio_id] = (body, plain)

    def remove(self, audio_id: str) -> None:
        with self.lock:
            del self.files[audio_id]

    def link(self, audio_id: str) -> str:
        with self.lock:
            self.links_given += 1
            return f"{self.url}/media/{audio_id}/{self.links_given}"

    def expire_links(self) -> None:
        """Every link given so far answers 403 4030 from now on."""
        with self.lock:
            self.expired_up_to = self.links_given

    def cut_next_after(self, size: int, expire: bool = False) -> None:
        """The next answer closes its connection after ``size`` bytes of its body (and then, with
        ``expire``, every link given so far expires)."""
        with self.lock:
            self.cut_after, self.expire_on_cut = size, expire

    def requests_of(self, audio_id: str) -> list[tuple]:
        """(range, if_range, status) of each request for the file."""
        with self.lock:
            return [(each["range"], each["if_range"], each["status"]) for each in self.requests if each["id"] == audio_id]

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        match = re.fullmatch(r"/media/([^/]+)/(\d+)", handler.path)
        audio_id, number = (match.group(1), int(match.group(2))) if match else ("", 0)
        with self.lock:
            expired = number <= self.expired_up_to
            found = self.files.get(audio_id)
            cut, self.cut_after = self.cut_after, None
            record = {"id": audio_id, "link": handler.path, "range": handler.headers.get("Range"),
                      "if_range": handler.headers.get("If-Range")}
            self.requests.append(record)
        if expired or found is None:
            code, msg = (4030, "the link has expired") if expired else (4040, "no such audio")
            record["status"] = code // 10
            return send(handler, code // 10, {}, json.dumps({"code": code, "msg": msg}).encode())
        status, headers, body = self.served(found, handler.headers)
        record["status"] = status
        if cut is None:
            return send(handler, status, headers, body)
        send(handler, status, headers, body[:cut], length=len(body))
        if self.expire_on_cut:
            self.expire_links()

    def served(self, found: tuple[bytes, bool], request: Any) -> tuple[int, dict, bytes]:
        body, plain = found
        digest = hashlib.sha256(b"a lie" if self.lie_about_digest else body).digest()
        headers = {"Content-Type": "audio/mpeg", "Accept-Ranges": "bytes"}
        etag = f'"{hashlib.sha256(body).hexdigest()}"'
        if not plain:
            headers.update({"ETag": etag, "Repr-Digest": f"sha-256=:{base64.b64encode(digest).decode()}:"})
        asked = re.fullmatch(r"bytes=(\d+)-", request.get("Range") or "")
        if not asked or request.get("If-Range") not in (None, etag) or plain:
            return 200, headers, body
        start = int(asked.group(1))
        if start >= len(body):
            return 416, {"Content-Range": f"bytes */{len(body)}"}, b""
        headers["Content-Range"] = f"bytes {start}-{len(body) - 1}/{len(body)}"
        return 206, headers, body[start:]


def send(handler: BaseHTTPRequestHandler, status: int, headers: dict, body: bytes,
         length: Optional[int] = None) -> None:
    """The answer, stating ``length`` (default: the body's) as its Content-Length; then the connection
    closes (HTTP/1.0), so a body shorter than stated is a connection cut part-way."""
    handler.send_response(status)
    for name, value in {"Content-Type": "application/json", **headers}.items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(body) if length is None else length))
    handler.end_headers()
    handler.wfile.write(body)
