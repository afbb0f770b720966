"""A receiver in a process of its own, for the test that kills one between answer and callback.

Serves the receiver with wsgiref on loopback, the outbox in the sqlite file RECEIVER_DATABASE, the
credentials in EARSHOT_BASE_URL, EARSHOT_ENTERPRISE_ID, EARSHOT_KEY_VERSION and EARSHOT_SECRET. Prints
one JSON line per step on stdout: {"listening": port}, {"stored": audioId, "eventType": …} and
{"callback": audioId, "erased": …} when a receipt callback starts. With RECEIVER_HOLD_CALLBACKS=1, every callback then waits for ever.

    python -m tests.receiver_process   (from kits/python)
"""

from __future__ import annotations

import json
import os
import sys
import threading
from wsgiref.simple_server import WSGIRequestHandler, make_server

from earshot_partner import Client, Outbox, PushEvent, Receiver, wsgi_app


def emit(line: dict) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    client = Client.from_env()
    hold = os.environ.get("RECEIVER_HOLD_CALLBACKS") == "1"

    def confirm(audio_id: str, erased: bool = False) -> None:
        emit({"callback": audio_id, "erased": erased})
        if hold:
            threading.Event().wait()
        client.confirm_receipt(audio_id, erased=erased)

    def store(event: PushEvent) -> None:
        emit({"stored": event.audio_id, "eventType": event.event_type})

    outbox = Outbox(os.environ["RECEIVER_DATABASE"], confirm, poll_interval=0.5)
    receiver = Receiver(secret=os.environ["EARSHOT_SECRET"], on_event=store, outbox=outbox)
    server = make_server("127.0.0.1", 0, wsgi_app(receiver), handler_class=QuietHandler)
    emit({"listening": server.server_port})
    server.serve_forever()


if __name__ == "__main__":
    main()
