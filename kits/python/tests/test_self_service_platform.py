"""The self-service calls against a real platform: endpoints added, listed, updated and removed; a
failed delivery's attempts read and replayed once the receiver is fixed; the receiver check passing
against the kit's receiver; service levels; a key rotation; and another enterprise's ids, unknown.

The platform is this module's own: a failed push is retried twice, 0.2 s apart, so a delivery fails
within a test."""

from __future__ import annotations

import json
import queue
import threading
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Optional
from wsgiref.simple_server import make_server

from earshot_partner import Client, EarshotError, Levels, Outbox, PushEvent, Receiver, wsgi_app

from .pushes import temporary_database
from .support import Platform, TimedTestCase, recording, wait_for
from .test_platform import TRANSCRIPT, QuietHandler

TRANSCRIPT_READY = "recording.transcript_ready"
DOWN = json.dumps({"code": 5030, "msg": "down for maintenance"}).encode()


class KitReceiver:
    """The kit's Receiver served by wsgiref in this process, calling back with the enterprise's client;
    while ``failing`` it answers every push 503 without opening it."""

    def __init__(self, case: TimedTestCase, secret: str, client: Client) -> None:
        self.failing = False
        self.events: "queue.Queue[PushEvent]" = queue.Queue()
        outbox = Outbox(temporary_database(case), client.confirm_receipt)
        case.addCleanup(outbox.close)
        app = wsgi_app(Receiver(secret=secret, outbox=outbox, on_event=self.events.put))
        server = make_server("127.0.0.1", 0, lambda *args: self.serve(app, *args), handler_class=QuietHandler)
        case.addCleanup(server.server_close)
        threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
        case.addCleanup(server.shutdown)
        self.url = f"http://127.0.0.1:{server.server_port}/earshot/push"

    def serve(self, app: Callable, environ: dict, start_response: Callable) -> Any:
        if not self.failing:
            return app(environ, start_response)
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        start_response("503 Service Unavailable", [("Content-Type", "application/json")])
        return [DOWN]


class SelfServiceOnPlatformTest(TimedTestCase):
    timeout = 90.0

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        # Its failed pushes are on purpose: no warning for each.
        cls.platform = Platform(EARSHOT_PUSH_RETRY_SCHEDULE="0.2,0.2", EARSHOT_LOG_LEVEL="error")
        cls.addClassCleanup(cls.platform.stop)

    def setUp(self) -> None:
        super().setUp()
        self.enterprise = self.platform.new_enterprise(f"python-kit {self._testMethodName}"[:100])
        self.client = self.client_of(self.enterprise)
        self.receiver = KitReceiver(self, self.enterprise["secret"], self.client)

    def client_of(self, enterprise: dict) -> Client:
        return Client(self.platform.partner_url, enterprise["enterpriseId"], enterprise["keyVersion"],
                      enterprise["secret"])

    def import_recordings(self, *audio_ids: str) -> None:
        lines = [recording(audio_id, transcript={**TRANSCRIPT, "transcriptId": 7100 + number})
                 for number, audio_id in enumerate(audio_ids)]
        self.platform.admin.import_recordings(self.enterprise["enterpriseId"], lines)

    def deliveries_in(self, state: str, count: int, **filters: Any) -> list:
        def reached() -> list:
            items = self.client.list_deliveries(state=state, **filters)["items"]
            return items if len(items) >= count else []

        return wait_for(reached, 30.0, f"{count} deliveries {state}")

    def test_an_endpoint_for_transcripts_only_is_added_listed_updated_and_removed(self) -> None:
        added = self.client.add_endpoint(self.receiver.url, event_types=[TRANSCRIPT_READY], description="ours")
        self.assertEqual((added["url"], added["eventTypes"], added["description"], added["enabled"]),
                         (self.receiver.url, [TRANSCRIPT_READY], "ours", True))
        self.assertEqual((added["enterpriseId"], added["maxPerSecond"]), (self.enterprise["enterpriseId"], None))
        self.assertIn("state", added["health"])
        self.assertEqual(self.client.list_endpoints()["items"], [added])
        updated = self.client.update_endpoint(added["endpointId"], description="transcripts", max_per_second=5)
        self.assertEqual((updated["description"], updated["maxPerSecond"]), ("transcripts", 5))
        self.assertEqual(self.client.list_endpoints()["items"][0]["maxPerSecond"], 5)
        removed = self.client.remove_endpoint(added["endpointId"])
        self.assertEqual(removed, {"endpointId": added["endpointId"], "cancelled": 0})
        self.assertEqual(self.client.list_endpoints()["items"], [])

    def failed_deliveries(self, *audio_ids: str) -> tuple[dict, list]:
        """An endpoint for transcripts only, the receiver failing, and the deliveries of the recordings
        failed (their retries spent); then the receiver is fixed."""
        since = datetime.now(timezone.utc) - timedelta(seconds=1)
        self.receiver.failing = True
        endpoint = self.client.add_endpoint(self.receiver.url, event_types=[TRANSCRIPT_READY])
        self.import_recordings(*audio_ids)
        failed = self.deliveries_in("failed", len(audio_ids), since=since)
        self.receiver.failing = False
        return endpoint, failed

    def test_failed_deliveries_show_the_receivers_answer_and_are_replayed_since_a_time(self) -> None:
        since = datetime.now(timezone.utc) - timedelta(seconds=1)
        endpoint, failed = self.failed_deliveries("aud_pyss_one", "aud_pyss_two")
        # Subscribed to transcripts only: the recordings' audio_ready events were not pushed to it.
        self.assertEqual({(each["eventType"], each["endpointId"]) for each in failed},
                         {(TRANSCRIPT_READY, endpoint["endpointId"])})
        attempts = failed[0]["attempts"]
        self.assertEqual([attempt["httpStatus"] for attempt in attempts], [503, 503, 503])
        self.assertIn("down for maintenance", attempts[0]["answer"])
        self.assertGreaterEqual(attempts[0]["durationMs"], 0)

        self.assertEqual(self.client.replay_since(since), {"replayed": 2})
        confirmed = self.deliveries_in("confirmed", 2, since=since)
        self.assertEqual({each["deliveryId"] for each in confirmed}, {each["deliveryId"] for each in failed})
        self.assertEqual([len(each["attempts"]) for each in confirmed], [4, 4])
        received = {self.receiver.events.get(timeout=10).audio_id for _ in range(2)}
        self.assertEqual(received, {"aud_pyss_one", "aud_pyss_two"})

    def test_one_failed_delivery_is_replayed_and_a_confirmed_one_cannot_be(self) -> None:
        _, [failed] = self.failed_deliveries("aud_pyss_single")
        self.assertEqual(self.client.replay_delivery(failed["deliveryId"]), {"replayed": 1})
        [confirmed] = self.deliveries_in("confirmed", 1, audio_id="aud_pyss_single")
        self.assertEqual(confirmed["attempts"][-1]["httpStatus"], 200)
        with self.assertRaises(EarshotError) as refused:
            self.client.replay_delivery(failed["deliveryId"])
        self.assertEqual(refused.exception.code, 4001)
        self.assertTrue(refused.exception.msg.startswith("deliveryId"), refused.exception.msg)

    def test_deliveries_are_read_page_by_page_following_the_cursor(self) -> None:
        self.client.add_endpoint(self.receiver.url)
        self.import_recordings("aud_pyss_p1", "aud_pyss_p2")
        self.deliveries_in("confirmed", 4)
        pages = list(self.client.iterate_deliveries(size=3))
        self.assertEqual([len(page["items"]) for page in pages], [3, 1])
        self.assertEqual((pages[0]["hasMore"], pages[-1]["hasMore"], pages[-1]["nextCursor"]), (True, False, None))
        self.assertEqual(len({each["deliveryId"] for page in pages for each in page["items"]}), 4)

    def test_the_kit_receiver_passes_the_receiver_check_and_stores_nothing(self) -> None:
        report = self.client.check_receiver(self.receiver.url)
        self.assertEqual([(item["id"], item["evidence"]) for item in report["items"] if not item["passed"]], [])
        self.assertEqual((report["passed"], report["url"], len(report["items"])), (True, self.receiver.url, 9))
        self.assertEqual((report["enterpriseId"], report["keyVersion"]), (self.enterprise["enterpriseId"], 1))
        self.assertTrue(self.receiver.events.empty())

    def test_service_levels_of_24h_and_7d(self) -> None:
        self.client.add_endpoint(self.receiver.url)
        self.import_recordings("aud_pyss_levels")
        self.deliveries_in("confirmed", 2)
        for window in ("24h", "7d"):
            with self.subTest(window=window):
                # The figures may lag the deliveries by up to 10 s.
                levels = wait_for(lambda: self.levels_with_receipts(window), 20.0, f"the {window} levels")
                self.assertEqual((levels["firstAttemptAckShare"], levels["backlog"]), (1, 0))
                self.assertGreaterEqual(levels["firstAttemptP95Ms"], levels["firstAttemptP50Ms"])
                self.assertGreaterEqual(levels["firstAttemptP50Ms"], 0)
                self.assertGreaterEqual(levels["ackToReceiptP95Ms"], 0)

    def levels_with_receipts(self, window: str) -> Optional[Levels]:
        levels = self.client.levels(window)
        return levels if levels["ackToReceiptP95Ms"] is not None and levels["backlog"] == 0 else None

    def test_after_rotating_the_key_the_client_goes_on_with_the_new_one(self) -> None:
        old_token = self.client.token()
        rotated = self.client.rotate_key()
        self.assertEqual(rotated["keyVersion"], 2)
        self.assertNotEqual(rotated["secret"], self.enterprise["secret"])
        self.assertEqual((self.client.key_version, self.client.query_audios()["total"]), (2, 0))
        self.assertNotEqual(self.client.token(), old_token)
        renewed = self.client_of({**self.enterprise, **rotated})
        self.assertEqual(renewed.levels()["backlog"], 0)
        # The old key works for the grace: other holders of the secret have time to change it.
        self.assertEqual(self.client_of(self.enterprise).list_endpoints()["items"], [])

    def test_another_enterprises_endpoint_and_delivery_are_unknown(self) -> None:
        endpoint = self.client.add_endpoint(self.receiver.url)
        self.import_recordings("aud_pyss_ours")
        [delivery, _] = self.deliveries_in("confirmed", 2)
        other = self.client_of(self.platform.new_enterprise("python-kit other"))
        for call in (lambda: other.update_endpoint(endpoint["endpointId"], enabled=False),
                     lambda: other.remove_endpoint(endpoint["endpointId"]),
                     lambda: other.replay_delivery(delivery["deliveryId"])):
            with self.assertRaises(EarshotError) as refused:
                call()
            self.assertEqual((refused.exception.code, refused.exception.http_status), (4040, 404))
            self.assertTrue(refused.exception.msg)
        self.assertEqual(other.list_deliveries(audio_id="aud_pyss_ours")["items"], [])
        self.assertEqual(self.client.list_endpoints()["items"][0]["enabled"], True)
