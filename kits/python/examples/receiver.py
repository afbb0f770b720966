import json
import os
import sqlite3
import threading
from wsgiref.simple_server import make_server

from earshot_partner import Client, Outbox, PushEvent, Receiver, wsgi_app

client = Client.from_env()
outbox = Outbox("earshot-outbox.sqlite", client.confirm_receipt)  # the receipt callbacks, made durably

database = sqlite3.connect("recordings.sqlite", check_same_thread=False)
database.execute("PRAGMA secure_delete = ON")  # removed data overwritten in the file, not left in free pages
database.execute("CREATE TABLE IF NOT EXISTS recordings"
                 " (audio_id TEXT PRIMARY KEY, event_type TEXT, occurred_at TEXT, data TEXT)")
lock = threading.Lock()  # one connection, shared by a threaded server's requests (Flask, uvicorn)


def store(event: PushEvent) -> None:
    # Committed before returning: the push is answered only afterwards. A push may come twice, or
    # after a newer one: the newest occurred_at wins. A deletion keeps the row without its data (only
    # the audioId and occurred_at), so an older push arriving after it cannot bring the recording back.
    data = None if event.is_deletion else json.dumps(event.data)
    with lock, database:
        database.execute(
            "INSERT INTO recordings VALUES (?, ?, ?, ?) ON CONFLICT (audio_id) DO UPDATE SET"
            " event_type = excluded.event_type, occurred_at = excluded.occurred_at, data = excluded.data"
            " WHERE excluded.occurred_at >= recordings.occurred_at",
            (event.audio_id, event.event_type, event.occurred_at, data),
        )
    print("stored", event.audio_id, event.event_type, flush=True)


receiver = Receiver(secret=os.environ["EARSHOT_SECRET"], on_event=store, outbox=outbox)

if __name__ == "__main__":
    server = make_server("127.0.0.1", int(os.environ.get("PORT", "8000")), wsgi_app(receiver, path="/earshot/push"))
    print(f"listening on http://127.0.0.1:{server.server_port}/earshot/push", flush=True)
    server.serve_forever()
