"""The WSGI and ASGI adapters: the answer first, the receipt callback released only once it was sent."""

from __future__ import annotations

import asyncio
import io
import json
import threading
import urllib.request
from wsgiref.simple_server import WSGIRequestHandler, make_server

from earshot_partner import asgi_app, wsgi_app

from .pushes import ReceiverCase, event, sealed


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def environ_for(body: bytes, path: str = "/earshot/push", method: str = "POST") -> dict:
    return {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_X_EARSHOT_EVENT_ID": "evt",
        "wsgi.input": io.BytesIO(body),
    }


class WsgiTest(ReceiverCase):
    def call(self, environ: dict) -> tuple:
        started: list = []
        iterable = wsgi_app(self.receiver)(environ, lambda status, headers: started.append((status, headers)))
        return started[0][0], dict(started[0][1]), iterable

    def test_the_callback_is_released_when_the_server_closes_the_response(self) -> None:
        pushed = event("aud_wsgi")
        status, headers, iterable = self.call(environ_for(sealed(pushed)))
        self.assertEqual(status, "200 OK")
        body = b"".join(iterable)
        self.assertEqual(json.loads(body)["code"], 2000)
        self.assertEqual(headers["Content-Length"], str(len(body)))
        self.assertEqual(self.state_of(pushed["eventId"]), "held")  # written, not yet closed
        iterable.close()
        self.assertEqual(self.confirm.wait_for(1), ["aud_wsgi"])

    def test_a_chunked_body_is_read_where_the_server_ends_the_input(self) -> None:
        environ = environ_for(sealed(event("aud_chunked")))
        del environ["CONTENT_LENGTH"]
        environ["wsgi.input_terminated"] = True
        status, _, iterable = self.call(environ)
        self.assertEqual((status, json.loads(b"".join(iterable))["code"]), ("200 OK", 2000))
        self.receiver.body_limit = 64
        environ = {**environ_for(sealed(event())), "wsgi.input_terminated": True}
        del environ["CONTENT_LENGTH"]
        status, headers, iterable = self.call(environ)
        self.assertEqual((status[:4], headers.get("Connection")), ("413 ", "close"))

    def test_other_paths_and_methods_are_refused(self) -> None:
        status, _, iterable = self.call(environ_for(b"{}", path="/elsewhere"))
        self.assertEqual((status, json.loads(b"".join(iterable))["code"]), ("404 Not Found", 4040))
        status, _, iterable = self.call(environ_for(b"", method="GET"))
        self.assertEqual((status, json.loads(b"".join(iterable))["code"]), ("400 Bad Request", 4000))

    def test_served_by_wsgiref_a_push_is_answered_then_called_back(self) -> None:
        server = make_server("127.0.0.1", 0, wsgi_app(self.receiver), handler_class=QuietHandler)
        self.addCleanup(server.server_close)
        thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
        thread.start()
        self.addCleanup(server.shutdown)
        request = urllib.request.Request(
            f"http://127.0.0.1:{server.server_port}/earshot/push", data=sealed(event("aud_served")),
            headers={"Content-Type": "application/json"}, method="POST",
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=10) as response:
            self.assertEqual((response.status, json.loads(response.read())["code"]), (200, 2000))
        self.assertEqual(self.confirm.wait_for(1), ["aud_served"])


class AsgiTest(ReceiverCase):
    def run_app(self, scope: dict, chunks: list) -> list:
        sent: list = []
        messages = [{"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1}
                    for index, chunk in enumerate(chunks)]

        async def receive() -> dict:
            return messages.pop(0)

        async def send(message: dict) -> None:
            sent.append(message)

        asyncio.run(asgi_app(self.receiver)(scope, receive, send))
        return sent

    def test_a_push_in_two_chunks_is_answered_and_released_after_the_body_was_sent(self) -> None:
        at_callback: list = []
        self.confirm.before_call = lambda audio_id: at_callback.append(len(sent))
        body = sealed(event("aud_asgi"))
        scope = {"type": "http", "method": "POST", "path": "/earshot/push",
                 "headers": [(b"content-type", b"application/json"), (b"x-earshot-check", b"1")]}
        sent = self.run_app(scope, [body[:10], body[10:]])
        start, answer = sent
        self.assertEqual((start["type"], start["status"]), ("http.response.start", 200))
        self.assertIn((b"content-type", b"application/json; charset=utf-8"), start["headers"])
        self.assertEqual((answer["type"], json.loads(answer["body"])["code"]), ("http.response.body", 2000))
        self.assertEqual(self.confirm.wait_for(1), ["aud_asgi"])
        self.assertEqual(at_callback, [2])

    def test_a_body_over_the_limit_is_refused_before_it_is_read_whole(self) -> None:
        self.receiver.body_limit = 16
        scope = {"type": "http", "method": "POST", "path": "/earshot/push", "headers": []}
        start, answer = self.run_app(scope, [b"x" * 10, b"x" * 10, b"never read"])
        self.assertEqual((start["status"], json.loads(answer["body"])["code"]), (413, 4130))

    def test_lifespan_messages_are_answered(self) -> None:
        incoming = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
        sent: list = []

        async def receive() -> dict:
            return incoming.pop(0)

        async def send(message: dict) -> None:
            sent.append(message["type"])

        asyncio.run(asgi_app(self.receiver)({"type": "lifespan"}, receive, send))
        self.assertEqual(sent, ["lifespan.startup.complete", "lifespan.shutdown.complete"])

