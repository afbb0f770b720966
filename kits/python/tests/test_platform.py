"""The kit against a real platform started for the run: the client's calls, pushes received by the
Python receiver and confirmed by its callback, and a receiver killed between answer and callback."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
from wsgiref.simple_server import WSGIRequestHandler, make_server

from earshot_partner import Client, EarshotError, Outbox, PushEvent, Receiver, wsgi_app

from .pushes import temporary_database
from .support import KIT, Platform, PlatformTestCase, read_line, recording, spawn, wait_for

TRANSCRIPT = {"transcriptId": 7001, "transcriptText": "Hello. Bye.", "durationMs": 1800, "wordsCount": 2,
              "sentences": [{"text": "Hello.", "beginTime": 0, "endTime": 900},
                            {"text": "Bye.", "beginTime": 1200, "endTime": 1800}]}


def client_of(enterprise: dict, platform: Platform) -> Client:
    return Client(platform.partner_url, enterprise["enterpriseId"], enterprise["keyVersion"],
                  enterprise["secret"])


class ClientOnPlatformTest(PlatformTestCase):
    """One enterprise with 25 recordings: 24 audio-only on two devices, and one with a transcript."""

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.enterprise = cls.platform.new_enterprise("python-kit client")
        recordings = [
            recording(f"aud_pyq_{number:02d}", deviceUid=f"DEV-PY-{number % 2}",
                      recordedAt=f"2026-11-02T{number:02d}:00:00Z")
            for number in range(24)
        ]
        recordings.append(recording("aud_pyq_transcript", deviceUid="DEV-PY-T", recordedAt="2026-11-03T00:00:00Z",
                                    transcript=TRANSCRIPT))
        cls.platform.admin.import_recordings(cls.enterprise["enterpriseId"], recordings)

    def setUp(self) -> None:
        super().setUp()
        self.client = client_of(self.enterprise, self.platform)

    def test_a_token_is_issued_and_reused(self) -> None:
        token = self.client.token()
        self.client.query_audios({"size": 1})
        self.assertEqual(self.client.token(), token)

    def test_a_page_is_the_newest_first_with_the_total_of_all_matches(self) -> None:
        page = self.client.query_audios({"size": 5})
        self.assertEqual((page["page"], page["size"], page["total"]), (1, 5, 25))
        self.assertEqual([item["audioId"] for item in page["items"]][:3],
                         ["aud_pyq_transcript", "aud_pyq_23", "aud_pyq_22"])
        newest = page["items"][0]["data"]
        self.assertEqual((newest["transcriptId"], newest["denoiseUrl"]), (7001, "https://cdn.example.com/aud_pyq_transcript.mp3"))
        self.assertEqual(json.loads(newest["transcriptSentences"])[1]["text"], "Bye.")

    def test_filters_select_by_device_time_range_and_audio_id(self) -> None:
        by_device = self.client.query_audios({"deviceUid": "DEV-PY-1", "size": 100})
        self.assertEqual(by_device["total"], 12)
        ranged = self.client.query_audios({"startTime": "2026-11-02T10:00:00Z", "endTime": "2026-11-02T12:00:00Z"})
        self.assertEqual([item["audioId"] for item in ranged["items"]], ["aud_pyq_11", "aud_pyq_10"])
        one = self.client.query_audios({"audioId": "aud_pyq_07"})
        self.assertEqual((one["total"], one["items"][0]["data"]["title"]), (1, "Recording aud_pyq_07"))

    def test_iterating_reads_every_page_once_and_a_page_past_the_end_is_empty(self) -> None:
        pages = list(self.client.iterate_audios({"size": 10}))
        self.assertEqual([len(page["items"]) for page in pages], [10, 10, 5])
        audio_ids = [item["audioId"] for page in pages for item in page["items"]]
        self.assertEqual(len(set(audio_ids)), 25)
        past = self.client.query_audios({"page": 9, "size": 10})
        self.assertEqual((past["items"], past["total"]), ([], 25))

    def test_the_platform_refusal_is_typed(self) -> None:
        with self.assertRaises(EarshotError) as refused:
            self.client.confirm_receipt("aud_not_of_this_enterprise")
        self.assertEqual((refused.exception.code, refused.exception.http_status), (4040, 404))
        self.assertTrue(refused.exception.request_id)
        wrong = Client(self.platform.partner_url, self.enterprise["enterpriseId"], 1, "0123456789abcdefghijklmnopqrstuv")
        with self.assertRaises(EarshotError) as undecryptable:
            wrong.token()
        self.assertEqual(undecryptable.exception.code, 4012)


class IssuedAtRequiredTest(PlatformTestCase):
    def test_every_request_carries_issued_at_so_an_enterprise_requiring_it_accepts_them(self) -> None:
        admin = self.platform.admin
        enterprise = self.platform.new_enterprise("python-kit issuedAt")
        enterprise_id = enterprise["enterpriseId"]
        updated = admin.call("PATCH", f"/admin/v1/enterprises/{enterprise_id}", {"requireIssuedAt": True})
        self.assertTrue(updated["requireIssuedAt"])
        admin.import_recordings(enterprise_id, [recording("aud_pyi_1")])
        client = client_of(enterprise, self.platform)
        self.assertEqual(client.query_audios({"size": 1})["total"], 1)
        self.assertEqual(len(client.changes(size=10)["items"]), 1)
        client.confirm_receipt("aud_pyi_1")


class ChangeFeedTest(PlatformTestCase):
    def test_the_feed_is_read_to_its_end_then_goes_on_from_the_stored_cursor(self) -> None:
        platform = self.platform
        enterprise = platform.new_enterprise("python-kit feed")
        admin, enterprise_id = platform.admin, enterprise["enterpriseId"]
        admin.import_recordings(enterprise_id, [recording(f"aud_pyf_{n}") for n in range(5)])
        client = client_of(enterprise, platform)
        pages = list(client.iterate_changes(size=2))
        self.assertEqual([len(page["items"]) for page in pages], [2, 2, 1])
        items = [item for page in pages for item in page["items"]]
        self.assertEqual([item["seq"] for item in items], [1, 2, 3, 4, 5])
        self.assertEqual({item["change"] for item in items}, {"created"})
        cursor = pages[-1]["nextCursor"]
        admin.call("DELETE", f"/admin/v1/enterprises/{enterprise_id}/recordings/aud_pyf_2")
        later = wait_for(lambda: client.changes(cursor)["items"], 10.0, "the deletion in the feed")
        self.assertEqual([(item["seq"], item["change"], item["audioId"]) for item in later], [(6, "deleted", "aud_pyf_2")])
        self.assertNotIn("data", later[0])


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


class PushTest(PlatformTestCase):
    """The Python receiver served by wsgiref in this process, calling back with the Client."""

    def setUp(self) -> None:
        super().setUp()
        self.server = make_server("127.0.0.1", 0, lambda *args: self.app(*args), handler_class=QuietHandler)
        self.addCleanup(self.server.server_close)
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()
        self.addCleanup(self.server.shutdown)
        url = f"http://127.0.0.1:{self.server.server_port}/earshot/push"
        self.enterprise = self.platform.new_enterprise("python-kit push", push_url=url)
        self.client = client_of(self.enterprise, self.platform)
        self.stored: "queue.Queue[PushEvent]" = queue.Queue()
        self.outbox = Outbox(temporary_database(self), self.client.confirm_receipt)
        self.addCleanup(self.outbox.close)
        receiver = Receiver(secret=self.enterprise["secret"], outbox=self.outbox, on_event=self.stored.put)
        self.app = wsgi_app(receiver)

    def test_pushes_are_received_and_confirmed_by_the_receipt_callback(self) -> None:
        admin, enterprise_id = self.platform.admin, self.enterprise["enterpriseId"]
        admin.import_recordings(enterprise_id, [
            recording("aud_pyp_audio"),
            recording("aud_pyp_both", transcript=TRANSCRIPT),
        ])
        received = {(event.audio_id, event.event_type) for event in (self.stored.get(timeout=30) for _ in range(3))}
        self.assertEqual(received, {("aud_pyp_audio", "recording.audio_ready"), ("aud_pyp_both", "recording.audio_ready"),
                                    ("aud_pyp_both", "recording.transcript_ready")})
        # Each of the three deliveries is confirmed by its own callback: wait for all of them, not the first.
        def all_confirmed() -> bool:
            return [each["state"] for each in admin.deliveries(enterprise_id)] == ["confirmed"] * 3

        wait_for(all_confirmed, 40.0, "the three deliveries confirmed")

    def test_the_receiver_passes_every_item_of_the_platforms_receiver_check_storing_nothing(self) -> None:
        url = f"http://127.0.0.1:{self.server.server_port}/earshot/push"
        path = f"/admin/v1/enterprises/{self.enterprise['enterpriseId']}/endpoints/check"
        report = self.platform.admin.call("POST", path, {"url": url, "callbackWithinSeconds": 30})
        self.assertEqual(len(report["items"]), 9)
        self.assertEqual([(item["id"], item["evidence"]) for item in report["items"] if not item["passed"]], [])
        self.assertTrue(report["passed"])
        # Answered and called back, yet never handed to on_event: the check leaves no recording behind.
        self.assertEqual([(each.audio_id, each.event_type) for each in list(self.stored.queue)], [])

    def test_a_deletion_is_acknowledged_and_its_erasure_confirmed_by_the_callback(self) -> None:
        admin, enterprise_id = self.platform.admin, self.enterprise["enterpriseId"]
        admin.import_recordings(enterprise_id, [recording("aud_pyp_deleted")])
        self.assertEqual(self.stored.get(timeout=30).event_type, "recording.audio_ready")
        admin.wait_for_delivery(enterprise_id, "aud_pyp_deleted", "confirmed")
        admin.call("DELETE", f"/admin/v1/enterprises/{enterprise_id}/recordings/aud_pyp_deleted")
        deletion = self.stored.get(timeout=30)
        self.assertEqual((deletion.event_type, deletion.data), ("recording.deleted", {}))
        wait_for(lambda: [each for each in admin.deliveries(enterprise_id, "aud_pyp_deleted")
                          if each["eventType"] == "recording.deleted" and each["state"] == "confirmed"],
                 30.0, "the deletion's delivery confirmed")
        # The platform answered the erasure confirmation 2000: the partner had the recording.
        wait_for(lambda: [each["state"] for each in self.outbox.callbacks(audio_id="aud_pyp_deleted")]
                 == ["confirmed", "confirmed"], 30.0, "the receipt and the erasure confirmed")
        receipt, erasure = self.outbox.callbacks(audio_id="aud_pyp_deleted")
        self.assertEqual((receipt["erased"], erasure["eventId"], erasure["erased"]),
                         (False, deletion.event_id, True))


class KilledReceiverTest(PlatformTestCase):

    def start_receiver(self, env: dict) -> subprocess.Popen:
        process = spawn([sys.executable, "-m", "tests.receiver_process"], {**os.environ, **env},
                        cwd=KIT, stdout=subprocess.PIPE, text=True)
        self.addCleanup(self.stop, process)
        return process

    @staticmethod
    def stop(process: subprocess.Popen) -> None:
        if process.poll() is None:
            process.kill()
        process.wait()
        if process.stdout:
            process.stdout.close()

    def next_line(self, process: subprocess.Popen, key: str) -> dict:
        while True:
            line = json.loads(read_line(process.stdout, 40.0, "the receiver"))
            if key in line:
                return line

    def test_a_receiver_killed_between_answer_and_callback_leaves_it_to_the_next_process(self) -> None:
        platform = self.platform
        enterprise = platform.new_enterprise("python-kit kill")
        admin, enterprise_id = platform.admin, enterprise["enterpriseId"]
        env = {**enterprise["env"], "RECEIVER_DATABASE": temporary_database(self)}
        first = self.start_receiver({**env, "RECEIVER_HOLD_CALLBACKS": "1"})
        port = self.next_line(first, "listening")["listening"]
        admin.set_push_url(enterprise_id, f"http://127.0.0.1:{port}/earshot/push")
        admin.import_recordings(enterprise_id, [recording("aud_pyk_1")])
        self.assertEqual(self.next_line(first, "stored")["stored"], "aud_pyk_1")
        # The callback started, so the answer went out: the platform records the ack, never a receipt.
        self.assertEqual(self.next_line(first, "callback")["callback"], "aud_pyk_1")
        admin.wait_for_delivery(enterprise_id, "aud_pyk_1", "acked")
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        self.assertEqual(admin.deliveries(enterprise_id, "aud_pyk_1")[0]["state"], "acked")

        second = self.start_receiver(env)
        self.assertEqual(self.next_line(second, "callback")["callback"], "aud_pyk_1")
        delivery = admin.wait_for_delivery(enterprise_id, "aud_pyk_1", "confirmed")
        self.assertEqual(len(delivery["attempts"]), 1)  # confirmed without being pushed again

    def test_a_receiver_killed_between_a_deletion_and_its_erasure_confirmation_leaves_it_to_the_next(self) -> None:
        platform = self.platform
        enterprise = platform.new_enterprise("python-kit kill erasure")
        admin, enterprise_id = platform.admin, enterprise["enterpriseId"]
        env = {**enterprise["env"], "RECEIVER_DATABASE": temporary_database(self)}
        def callback_states(erased: int) -> list:
            with contextlib.closing(sqlite3.connect(env["RECEIVER_DATABASE"])) as db:
                return [row[0] for row in db.execute(
                    "SELECT state FROM earshot_receipt_callbacks WHERE audio_id = 'aud_pyk_erased' AND erased = ?",
                    (erased,))]

        first = self.start_receiver(env)
        port = self.next_line(first, "listening")["listening"]
        admin.set_push_url(enterprise_id, f"http://127.0.0.1:{port}/earshot/push")
        admin.import_recordings(enterprise_id, [recording("aud_pyk_erased")])
        admin.wait_for_delivery(enterprise_id, "aud_pyk_erased", "confirmed")
        # Killed only once its outbox has the receipt's answer too: killed earlier, the next process would
        # send the receipt again (as it should) before the erasure confirmation this test follows.
        wait_for(lambda: callback_states(0) == ["confirmed"], 30.0, "the receipt confirmed in the outbox")
        first.send_signal(signal.SIGKILL)
        first.wait(10)

        holding = self.start_receiver({**env, "RECEIVER_HOLD_CALLBACKS": "1"})
        port = self.next_line(holding, "listening")["listening"]
        admin.set_push_url(enterprise_id, f"http://127.0.0.1:{port}/earshot/push")
        admin.call("DELETE", f"/admin/v1/enterprises/{enterprise_id}/recordings/aud_pyk_erased")
        self.assertEqual(self.next_line(holding, "stored")["eventType"], "recording.deleted")
        # The erasure confirmation started, so the deletion was answered after its removal.
        self.assertEqual(self.next_line(holding, "callback"), {"callback": "aud_pyk_erased", "erased": True})
        holding.send_signal(signal.SIGKILL)
        holding.wait(10)

        second = self.start_receiver(env)
        self.assertEqual(self.next_line(second, "callback"), {"callback": "aud_pyk_erased", "erased": True})
        # The platform answered it 2000: the partner had the recording.
        wait_for(lambda: callback_states(1) == ["confirmed"], 30.0, "the erasure confirmed by the platform")
