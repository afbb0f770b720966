"""A scripted stand-in for the partner API, for what the real platform cannot be made to do on cue
(expire a token, fail with 5000): it opens each request with the enterprise's key and answers as told."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

from earshot_partner.envelope import open_envelope, seal

Answer = tuple  # (HTTP status, body bytes or JSON value, headers dict)


class FakePlatform:
    """Records every request as {path, token, envelope, plaintext}; ``answers[path]`` scripts answers:
    a list consumed one per request (the last one repeats), each (status, body, headers) or a function
    of the request returning one. Without a script, the token route answers a token and the others
    answer 2000 with their plaintext sealed back as data. ``keys`` (keyVersion: key) opens requests and
    seals answers with the request's keyVersion: add one to stand for a rotated key."""

    def __init__(self, key: bytes) -> None:
        self.keys = {1: key}
        self.requests: list[dict] = []
        self.answers: dict[str, list] = {}
        self.tokens_issued = 0
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, payload, headers = fake.handle(self.path, self.headers, body)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def requests_to(self, path: str) -> list[dict]:
        with self.lock:
            return [each for each in self.requests if each["path"] == path]

    def handle(self, path: str, headers: Any, body: bytes) -> Answer:
        envelope = json.loads(body)
        authorization = headers.get("Authorization") or ""
        request = {
            "path": path,
            "token": authorization[len("Bearer "):] if authorization.startswith("Bearer ") else None,
            "envelope": envelope,
            "plaintext": open_envelope(envelope, self.keys).plaintext,
        }
        with self.lock:
            self.requests.append(request)
            script = self.answers.get(path)
            scripted = (script.pop(0) if len(script) > 1 else script[0]) if script else None
        if scripted is None:
            return self.default_answer(request)
        answered = scripted(request) if callable(scripted) else scripted
        status, payload = answered[0], answered[1]
        return status, payload, answered[2] if len(answered) > 2 else {}

    def default_answer(self, request: dict) -> Answer:
        if request["path"] == "/openapi/v1/token":
            with self.lock:
                self.tokens_issued += 1
                number = self.tokens_issued
            return 200, ok({"accessToken": f"token-{number}", "expiresIn": 7200, "tokenType": "Bearer"}), {}
        if request["path"] == "/openapi/v1/callback":
            return 200, ok(None), {}
        return 200, ok(self.sealed(request, page_of(request))), {}

    def sealed(self, request: dict, plaintext: dict) -> dict:
        envelope = request["envelope"]
        return seal(self.keys[envelope["keyVersion"]], envelope["keyVersion"], envelope["eventId"], plaintext)


def ok(data: Any) -> dict:
    body = {"code": 2000, "msg": "success", "requestId": "req-ok"}
    if data is not None:
        body["data"] = data
    return body


def refusal(code: int, msg: str = "refused", request_id: Optional[str] = "req-refused") -> dict:
    body: dict = {"code": code, "msg": msg}
    if request_id is not None:
        body["requestId"] = request_id
    return body


def page_of(request: dict) -> dict:
    if request["path"] == "/openapi/v1/audios/changes":
        return {"specVersion": "1", "items": [], "nextCursor": "MTox", "hasMore": False, "lagSeconds": 0}
    return {"specVersion": "1", "page": 1, "size": 20, "total": 0, "items": []}
