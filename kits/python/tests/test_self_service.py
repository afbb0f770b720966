"""The self-service calls against a scripted stand-in of the partner API: the wire's paths and fields,
arguments checked before sending, answers checked, the key rotation switching the client, and what is
never sent twice. (test_self_service_platform.py runs them against the real platform.)"""

from __future__ import annotations

import threading
import urllib.error
from datetime import datetime, timedelta, timezone

from earshot_partner import Client, EarshotError, EarshotNetworkError, EarshotResponseError
from earshot_partner.envelope import load_key
from earshot_partner.replies import is_unacted

from .fake_platform import FakePlatform, ok, refusal
from .support import TimedTestCase

SECRET = "wv+7DCv0af3nC9Fme+s3OZBWDJc16kPLzKja6ht0Vq0="
NEW_SECRET = "ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM="
TOKEN = "/openapi/v1/token"

ENDPOINT = {"endpointId": 3, "enterpriseId": 42, "url": "https://hooks.example.com/earshot",
            "eventTypes": ["recording.transcript_ready"], "description": "", "enabled": True, "maxPerSecond": None,
            "createdAt": "2026-11-29T08:00:00.000Z", "waiting": 0,
            "health": {"state": "healthy", "reason": None, "lastSuccessAt": None, "lastFailureAt": None}}
DELIVERY = {"deliveryId": 17, "endpointId": 3, "eventId": "evt-17", "eventType": "recording.transcript_ready",
            "audioId": "aud_1", "state": "failed", "createdAt": "2026-11-29T08:01:00.000Z",
            "attempts": [{"startedAt": "2026-11-29T08:01:00.100Z", "durationMs": 12, "httpStatus": 503,
                          "answer": '{"code":5030,"msg":"down"}'}]}
REPORT = {"url": "https://hooks.example.com/earshot", "enterpriseId": 42, "keyVersion": 1, "passed": True,
          "items": [{"id": "valid-push", "severity": "failure", "passed": True, "expected": "2000",
                     "evidence": "HTTP 200, code 2000"}]}
LEVELS = {"firstAttemptP50Ms": 41.5, "firstAttemptP95Ms": 120, "firstAttemptAckShare": 0.98,
          "ackToReceiptP95Ms": None, "backlog": 2}
LINK = {"url": "https://earshot.example.com/portal/enter/abc", "expiresAt": "2026-11-29T08:15:00.000Z"}


class FakeCase(TimedTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.fake = FakePlatform(load_key(SECRET))
        self.addCleanup(self.fake.close)
        self.sleeps: list[float] = []
        self.client = Client(self.fake.url, 42, 1, SECRET, sleep=self.sleeps.append,
                             wall_clock=lambda: 1_796_000_000.0)

    def answer(self, path: str, data: dict) -> None:
        self.fake.answers[path] = [lambda request: (200, ok(self.fake.sealed(request, data)))]

    def sent(self, path: str) -> list[dict]:
        return [{name: value for name, value in each["plaintext"].items() if name != "issuedAt"}
                for each in self.fake.requests_to(path)]


class SelfServiceTest(FakeCase):
    def test_each_call_sends_the_wires_plaintext_to_its_path_and_answers_the_opened_data(self) -> None:
        since = datetime(2026, 11, 29, 8, 0, tzinfo=timezone(timedelta(hours=8)))
        calls = [
            ("endpoints/list", lambda: self.client.list_endpoints(), {}, {"items": [ENDPOINT]}),
            ("endpoints/add", lambda: self.client.add_endpoint(ENDPOINT["url"], event_types=["transcript_ready"]),
             {"url": ENDPOINT["url"], "eventTypes": ["transcript_ready"]}, ENDPOINT),
            ("endpoints/update", lambda: self.client.update_endpoint(3, description="ours", max_per_second=None),
             {"endpointId": 3, "description": "ours", "maxPerSecond": None}, ENDPOINT),
            ("endpoints/remove", lambda: self.client.remove_endpoint(3), {"endpointId": 3},
             {"endpointId": 3, "cancelled": 1}),
            ("endpoints/check", lambda: self.client.check_receiver(ENDPOINT["url"]), {"url": ENDPOINT["url"]}, REPORT),
            ("endpoints/check", lambda: self.client.check_receiver(ENDPOINT["url"], callback_within_seconds=5),
             {"url": ENDPOINT["url"], "callbackWithinSeconds": 5}, REPORT),
            ("deliveries/list", lambda: self.client.list_deliveries(state="failed", since=since, size=5),
             {"state": "failed", "since": "2026-11-29T08:00:00+08:00", "size": 5},
             {"items": [DELIVERY], "nextCursor": None, "hasMore": False}),
            ("deliveries/replay", lambda: self.client.replay_delivery(17), {"deliveryId": 17}, {"replayed": 1}),
            ("deliveries/replay", lambda: self.client.replay_since("2026-11-29T00:00:00Z"),
             {"states": ["failed", "unconfirmed"], "since": "2026-11-29T00:00:00Z"}, {"replayed": 4}),
            ("levels", lambda: self.client.levels("7d"), {"window": "7d"}, LEVELS),
            ("portal/link", lambda: self.client.portal_link("view"), {"access": "view"}, LINK),
            ("portal/link", lambda: self.client.portal_link(), {}, LINK),
        ]
        for suffix, call, plaintext, data in calls:
            with self.subTest(path=suffix, plaintext=plaintext):
                path = f"/openapi/v1/{suffix}"
                self.fake.requests.clear()
                self.answer(path, data)
                self.assertEqual(call(), data)
                self.assertEqual(self.sent(path), [plaintext])
                self.assertEqual(self.fake.requests_to(path)[0]["token"], "token-1")

    def test_arguments_are_checked_before_anything_is_sent_naming_the_wires_field(self) -> None:
        naive = datetime(2026, 11, 29, 8, 0)
        bad_calls = [
            ("window", lambda: self.client.levels("30d")),
            ("access", lambda: self.client.portal_link("admin")),
            ("endpointId", lambda: self.client.update_endpoint(0, enabled=False)),
            ("endpointId", lambda: self.client.remove_endpoint(True)),  # type: ignore[arg-type]
            ("deliveryId", lambda: self.client.replay_delivery("17")),  # type: ignore[arg-type]
            ("eventTypes", lambda: self.client.add_endpoint("https://x.example", event_types="transcript_ready")),
            ("maxPerSecond", lambda: self.client.add_endpoint("https://x.example", max_per_second=0)),
            ("enabled", lambda: self.client.update_endpoint(3, enabled="yes")),
            ("url", lambda: self.client.check_receiver("")),
            ("callbackWithinSeconds", lambda: self.client.check_receiver("https://x.example", callback_within_seconds=61)),
            ("size", lambda: self.client.list_deliveries(size=101)),
            ("since", lambda: self.client.list_deliveries(since=naive)),
            ("until", lambda: self.client.list_deliveries(until="2026-11-29 08:00")),
            ("states", lambda: self.client.replay_since("2026-11-29T00:00:00Z", states=[])),
        ]
        for field, call in bad_calls:
            with self.subTest(field=field):
                with self.assertRaises(EarshotError) as refused:
                    call()
                self.assertEqual(refused.exception.code, 4001)
                self.assertTrue(refused.exception.msg.startswith(f"{field}: "), refused.exception.msg)
        self.assertEqual(self.fake.requests, [])

    def test_iterating_deliveries_follows_next_cursor_keeping_the_filter(self) -> None:
        pages = iter([("Yzox", True), ("Yzoy", True), (None, False)])

        def page(request: dict) -> tuple:
            cursor, more = next(pages)
            return 200, ok(self.fake.sealed(request, {"items": [DELIVERY], "nextCursor": cursor, "hasMore": more}))

        self.fake.answers["/openapi/v1/deliveries/list"] = [page]
        seen = list(self.client.iterate_deliveries(audio_id="aud_1", size=1))
        self.assertEqual([each["nextCursor"] for each in seen], ["Yzox", "Yzoy", None])
        self.assertEqual(self.sent("/openapi/v1/deliveries/list"), [
            {"audioId": "aud_1", "size": 1}, {"audioId": "aud_1", "size": 1, "cursor": "Yzox"},
            {"audioId": "aud_1", "size": 1, "cursor": "Yzoy"}])

    def test_an_answer_not_of_its_shape_is_a_response_error(self) -> None:
        self.answer("/openapi/v1/levels", {**LEVELS, "backlog": "2"})
        with self.assertRaises(EarshotResponseError) as refused:
            self.client.levels()
        self.assertIn("backlog", refused.exception.msg)
        self.answer("/openapi/v1/endpoints/list", {"endpoints": [ENDPOINT]})
        with self.assertRaises(EarshotResponseError):
            self.client.list_endpoints()

    def test_a_refusal_is_typed_with_the_platforms_code_and_message(self) -> None:
        self.fake.answers["/openapi/v1/endpoints/update"] = [
            (404, refusal(4040, "endpointId 9: no such endpoint of this enterprise", request_id="req-9"))]
        with self.assertRaises(EarshotError) as refused:
            self.client.update_endpoint(9, enabled=False)
        error = refused.exception
        self.assertEqual((error.code, error.name, error.request_id), (4040, "NOT_FOUND", "req-9"))
        self.assertEqual(len(self.fake.requests_to("/openapi/v1/endpoints/update")), 1)


class RotationTest(FakeCase):
    def rotated_to(self, key_version: int, secret: str) -> None:
        self.fake.keys[key_version] = load_key(secret)
        self.answer("/openapi/v1/key/rotate", {"keyVersion": key_version, "secret": secret})

    def test_after_rotating_the_client_seals_with_the_new_key_and_gets_a_token_of_it(self) -> None:
        self.answer("/openapi/v1/levels", LEVELS)
        self.client.levels()
        self.rotated_to(2, NEW_SECRET)
        self.assertEqual(self.client.rotate_key(), {"keyVersion": 2, "secret": NEW_SECRET})
        [rotation] = self.fake.requests_to("/openapi/v1/key/rotate")
        self.assertEqual((rotation["envelope"]["keyVersion"], rotation["token"]), (1, "token-1"))
        self.assertEqual(self.client.key_version, 2)
        self.client.levels()
        tokens = self.fake.requests_to(TOKEN)
        self.assertEqual([each["envelope"]["keyVersion"] for each in tokens], [1, 2])
        after = self.fake.requests_to("/openapi/v1/levels")[-1]
        self.assertEqual((after["envelope"]["keyVersion"], after["token"]), (2, "token-2"))

    def test_a_call_in_flight_during_a_rotation_opens_its_answer_with_the_key_that_sealed_it(self) -> None:
        arrived, release = threading.Event(), threading.Event()

        def slow_levels(request: dict) -> tuple:
            arrived.set()
            release.wait(10)
            return 200, ok(self.fake.sealed(request, LEVELS))

        self.fake.answers["/openapi/v1/levels"] = [slow_levels]
        answers: list = []
        reader = threading.Thread(target=lambda: answers.append(self.client.levels()))
        reader.start()
        self.assertTrue(arrived.wait(10))
        self.rotated_to(2, NEW_SECRET)
        self.client.rotate_key()
        release.set()
        reader.join(10)
        self.assertEqual(answers, [LEVELS])
        self.assertEqual(self.client.key_version, 2)

    def test_a_rotation_answer_with_an_unusable_secret_is_refused_without_echoing_it(self) -> None:
        self.answer("/openapi/v1/key/rotate", {"keyVersion": 2, "secret": "short-secret-value"})
        with self.assertRaises(EarshotResponseError) as refused:
            self.client.rotate_key()
        self.assertNotIn("short-secret-value", str(refused.exception))
        self.assertEqual(self.client.key_version, 1)

    def test_calls_that_must_not_happen_twice_are_resent_only_after_a_refusal_that_did_nothing(self) -> None:
        cases = [
            ("key/rotate", lambda: self.client.rotate_key(), {"keyVersion": 2, "secret": NEW_SECRET}),
            ("endpoints/add", lambda: self.client.add_endpoint("https://x.example"), ENDPOINT),
            ("endpoints/remove", lambda: self.client.remove_endpoint(3), {"endpointId": 3, "cancelled": 0}),
            ("endpoints/check", lambda: self.client.check_receiver(REPORT["url"]), REPORT),
            ("deliveries/replay", lambda: self.client.replay_delivery(17), {"replayed": 1}),
            ("deliveries/replay", lambda: self.client.replay_since("2026-11-29T00:00:00Z"), {"replayed": 4}),
        ]
        self.fake.keys[2] = load_key(NEW_SECRET)
        for suffix, call, data in cases:
            with self.subTest(path=suffix):
                path = f"/openapi/v1/{suffix}"
                self.fake.requests.clear()
                self.fake.answers[path] = [(500, refusal(5000, "internal error"))]
                with self.assertRaises(EarshotError) as failed:
                    call()
                self.assertEqual(failed.exception.code, 5000)
                self.assertEqual(len(self.fake.requests_to(path)), 1)
                self.fake.answers[path] = [(503, refusal(5030, "busy"), {"Retry-After": "1"}),
                                           lambda request: (200, ok(self.fake.sealed(request, data)))]
                self.assertEqual(call(), data)
                self.assertEqual(len(self.fake.requests_to(path)), 3)

    def test_only_a_refused_connection_is_a_network_failure_that_did_nothing(self) -> None:
        def failure(reason: BaseException) -> EarshotNetworkError:
            try:
                raise EarshotNetworkError("cannot reach") from urllib.error.URLError(reason)
            except EarshotNetworkError as error:
                return error

        self.assertTrue(is_unacted(failure(ConnectionRefusedError(111, "refused"))))
        self.assertFalse(is_unacted(failure(TimeoutError("timed out"))))
        self.assertFalse(is_unacted(failure(ConnectionResetError(104, "reset"))))
        self.assertFalse(is_unacted(EarshotError(4290, "slow down", retry_after=600)))


class ReceiverCheckTimeoutTest(TimedTestCase):
    def test_the_receiver_check_waits_longer_than_the_clients_timeout(self) -> None:
        fake = FakePlatform(load_key(SECRET))
        self.addCleanup(fake.close)
        answered = threading.Event()

        def slow_report(request: dict) -> tuple:
            answered.wait(1.0)  # nothing sets it: the report takes a second, twice the client's timeout
            return 200, ok(fake.sealed(request, REPORT))

        fake.answers["/openapi/v1/endpoints/check"] = [slow_report]
        client = Client(fake.url, 42, 1, SECRET, timeout=0.5, retries=0)
        self.assertTrue(client.check_receiver(REPORT["url"])["passed"])
        self.assertEqual(len(fake.requests_to("/openapi/v1/endpoints/check")), 1)
