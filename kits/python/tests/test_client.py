"""The client against a scripted stand-in of the partner API: tokens shared and renewed, refusals
typed, retries sealed afresh. (test_platform.py runs it against the real platform.)"""

from __future__ import annotations

import socket
import threading

from earshot_partner import Client, EarshotError, EarshotNetworkError, EarshotResponseError
from earshot_partner.envelope import load_key, seal

from .fake_platform import FakePlatform, ok, refusal
from .support import TimedTestCase

SECRET = "wv+7DCv0af3nC9Fme+s3OZBWDJc16kPLzKja6ht0Vq0="
AUDIOS = "/openapi/v1/audios"
TOKEN = "/openapi/v1/token"


class ClientTest(TimedTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.fake = FakePlatform(load_key(SECRET))
        self.addCleanup(self.fake.close)
        self.sleeps: list[float] = []
        self.now = 1000.0
        self.wall = 1_793_491_200.9
        self.client = Client(self.fake.url, 42, 1, SECRET, sleep=self.sleeps.append, clock=lambda: self.now,
                             wall_clock=lambda: self.wall)

    def nonces(self, path: str) -> list[str]:
        return [each["envelope"]["nonce"] for each in self.fake.requests_to(path)]

    def test_the_token_request_carries_the_enterprise_beside_a_sealed_empty_object(self) -> None:
        self.assertEqual(self.client.token(), "token-1")
        [request] = self.fake.requests_to(TOKEN)
        self.assertEqual(request["envelope"]["enterpriseId"], 42)
        self.assertEqual(request["plaintext"], {"issuedAt": 1_793_491_200})
        self.assertIsNone(request["token"])

    def test_an_erasure_confirmation_is_the_callback_with_erased_true_a_receipt_has_no_erased(self) -> None:
        self.client.confirm_receipt("aud_1")
        self.client.confirm_erasure("aud_2")
        self.client.confirm_receipt("aud_3", erased=True)
        self.assertEqual([each["plaintext"] for each in self.fake.requests_to("/openapi/v1/callback")],
                         [{"audioId": "aud_1", "issuedAt": 1_793_491_200},
                          {"audioId": "aud_2", "erased": True, "issuedAt": 1_793_491_200},
                          {"audioId": "aud_3", "erased": True, "issuedAt": 1_793_491_200}])

    def test_concurrent_threads_share_one_token_request(self) -> None:
        arrived, release = threading.Event(), threading.Event()

        def slow_token(request: dict) -> tuple:
            arrived.set()
            release.wait(10)
            return 200, ok({"accessToken": "shared", "expiresIn": 7200, "tokenType": "Bearer"})

        self.fake.answers[TOKEN] = [slow_token]
        start = threading.Barrier(8)
        tokens: list[str] = []

        def call() -> None:
            start.wait()
            tokens.append(self.client.token())

        threads = [threading.Thread(target=call) for _ in range(8)]
        for thread in threads:
            thread.start()
        self.assertTrue(arrived.wait(10))
        release.set()
        for thread in threads:
            thread.join(10)
        self.assertEqual(tokens, ["shared"] * 8)
        self.assertEqual(len(self.fake.requests_to(TOKEN)), 1)

    def test_a_failed_token_request_fails_every_thread_waiting_for_it_and_the_next_call_asks_again(self) -> None:
        self.fake.answers[TOKEN] = [(401, refusal(4012, "the envelope could not be decrypted"))]
        with self.assertRaises(EarshotError) as refused:
            self.client.token()
        self.assertEqual(refused.exception.code, 4012)
        del self.fake.answers[TOKEN]
        self.assertEqual(self.client.token(), "token-1")

    def test_the_token_is_reused_until_five_minutes_before_it_expires(self) -> None:
        self.client.query_audios()
        self.client.changes()
        self.assertEqual(len(self.fake.requests_to(TOKEN)), 1)
        self.now += 7200 - 300 - 1
        self.client.confirm_receipt("aud_1")
        self.assertEqual(len(self.fake.requests_to(TOKEN)), 1)
        self.now += 2
        self.client.confirm_receipt("aud_1")
        self.assertEqual(len(self.fake.requests_to(TOKEN)), 2)
        self.assertEqual(self.fake.requests_to("/openapi/v1/callback")[-1]["token"], "token-2")

    def test_a_token_refused_as_expired_is_dropped_and_the_call_sent_once_more_sealed_afresh(self) -> None:
        self.fake.answers[AUDIOS] = [(401, refusal(4011, "the access token has expired")), None]
        self.fake.answers[AUDIOS][1] = lambda request: (200, ok(self.fake.sealed(request, PAGE)))
        page = self.client.query_audios({"size": 5})
        self.assertEqual(page["total"], 0)
        calls = self.fake.requests_to(AUDIOS)
        self.assertEqual([each["token"] for each in calls], ["token-1", "token-2"])
        self.assertEqual(len(set(self.nonces(AUDIOS))), 2)
        self.assertEqual(calls[0]["plaintext"], {"size": 5, "issuedAt": 1_793_491_200})

    def test_a_second_token_refusal_is_raised_not_retried_again(self) -> None:
        self.fake.answers[AUDIOS] = [(401, refusal(4010, "missing or invalid bearer token"))]
        with self.assertRaises(EarshotError) as refused:
            self.client.query_audios()
        self.assertEqual(refused.exception.code, 4010)
        self.assertEqual(len(self.fake.requests_to(AUDIOS)), 2)

    def test_5000_and_5030_are_retried_with_backoff_each_attempt_with_a_new_nonce(self) -> None:
        self.fake.answers["/openapi/v1/callback"] = [
            (500, refusal(5000, "internal error")),
            (503, refusal(5030, "unavailable"), {"Retry-After": "2"}),
            (200, ok(None)),
        ]
        self.client.confirm_receipt("aud_1")
        self.assertEqual(len(set(self.nonces("/openapi/v1/callback"))), 3)
        self.assertEqual(len(self.sleeps), 2)
        self.assertGreaterEqual(self.sleeps[1], 2.0)

    def test_retries_stop_after_the_last_attempt_and_raise_the_last_refusal(self) -> None:
        self.fake.answers[AUDIOS] = [(500, refusal(5000, "internal error", request_id="req-5000"))]
        with self.assertRaises(EarshotError) as refused:
            self.client.query_audios()
        self.assertEqual((refused.exception.code, refused.exception.request_id), (5000, "req-5000"))
        self.assertEqual(len(self.fake.requests_to(AUDIOS)), 4)
        self.assertEqual(len(self.sleeps), 3)

    def test_a_refusal_is_typed_with_code_msg_request_id_and_not_retried(self) -> None:
        self.fake.answers["/openapi/v1/callback"] = [
            (404, refusal(4040, 'audioId "x" is not a recording of this enterprise', request_id=None),
             {"X-Request-Id": "from-header"})
        ]
        with self.assertRaises(EarshotError) as refused:
            self.client.confirm_receipt("x")
        error = refused.exception
        self.assertEqual((error.code, error.name, error.http_status), (4040, "NOT_FOUND", 404))
        self.assertEqual(error.msg, 'audioId "x" is not a recording of this enterprise')
        self.assertEqual(error.request_id, "from-header")
        self.assertEqual(self.sleeps, [])

    def test_an_answer_that_is_not_earshots_is_a_response_error_retried_only_from_a_gateway(self) -> None:
        self.fake.answers[AUDIOS] = [(502, b"<html>bad gateway</html>"), (200, b"not json")]
        with self.assertRaises(EarshotResponseError) as refused:
            self.client.query_audios()
        self.assertEqual(refused.exception.http_status, 200)
        self.assertIsNone(refused.exception.code)
        self.assertEqual(len(self.fake.requests_to(AUDIOS)), 2)

    def test_data_sealed_for_another_request_is_refused(self) -> None:
        key = load_key(SECRET)
        self.fake.answers[AUDIOS] = [(200, ok(seal(key, 1, "another-event", PAGE)))]
        with self.assertRaises(EarshotResponseError):
            self.client.query_audios()

    def test_an_unreachable_platform_is_a_network_error_after_the_retries(self) -> None:
        with socket.socket() as unused:
            unused.bind(("127.0.0.1", 0))
            port = unused.getsockname()[1]
        client = Client(f"http://127.0.0.1:{port}", 42, 1, SECRET, retries=2, sleep=self.sleeps.append)
        with self.assertRaises(EarshotNetworkError) as failed:
            client.token()
        self.assertIsNone(failed.exception.code)
        self.assertEqual(len(self.sleeps), 2)

    def test_a_filter_is_checked_before_anything_is_sent(self) -> None:
        for bad, field in (({"devceUid": "D"}, "devceUid"), ({"size": 101}, "size"), ({"page": 0}, "page"),
                           ({"startTime": "2026-11-01T00:00:00"}, "startTime"), ({"size": True}, "size"),
                           ({"endTime": "2026-02-30T00:00:00Z"}, "endTime")):
            with self.subTest(bad=bad):
                with self.assertRaises(EarshotError) as refused:
                    self.client.query_audios(bad)
                self.assertEqual(refused.exception.code, 4001)
                self.assertTrue(refused.exception.msg.startswith(field))
        self.assertEqual(self.fake.requests, [])

    def test_iterating_changes_follows_next_cursor_until_has_more_is_false(self) -> None:
        pages = iter([("Mjox", True), ("Mjoy", True), ("Mjoz", False)])

        def change_page(request: dict) -> tuple:
            cursor, more = next(pages)
            plaintext = {"specVersion": "1", "items": [], "nextCursor": cursor, "hasMore": more}
            return 200, ok(self.fake.sealed(request, plaintext))

        self.fake.answers["/openapi/v1/audios/changes"] = [change_page]
        cursors = [page["nextCursor"] for page in self.client.iterate_changes(size=10)]
        self.assertEqual(cursors, ["Mjox", "Mjoy", "Mjoz"])
        sent = [each["plaintext"] for each in self.fake.requests_to("/openapi/v1/audios/changes")]
        stamp = {"issuedAt": 1_793_491_200}
        self.assertEqual(sent, [{"size": 10, **stamp}, {"cursor": "Mjox", "size": 10, **stamp},
                                {"cursor": "Mjoy", "size": 10, **stamp}])

    def test_every_request_carries_issued_at_from_the_wall_clock_as_sealed_each_attempt(self) -> None:
        self.fake.answers[AUDIOS] = [(503, refusal(5030, "busy")), None]
        self.fake.answers[AUDIOS][1] = lambda request: (200, ok(self.fake.sealed(request, PAGE)))
        self.client.token()
        self.wall += 5
        self.client.query_audios({})
        self.client.confirm_receipt("aud_1")
        stamps = [each["plaintext"].get("issuedAt") for each in self.fake.requests]
        self.assertEqual(stamps, [1_793_491_200, 1_793_491_205, 1_793_491_205, 1_793_491_205])

    def test_options_are_checked_and_the_secret_never_echoed(self) -> None:
        with self.assertRaises(ValueError) as refused:
            Client(self.fake.url, 42, 1, "not-a-secret-at-all")
        self.assertNotIn("not-a-secret-at-all", str(refused.exception))
        for bad in ({"enterprise_id": 0}, {"key_version": 1.5}, {"base_url": "ftp://x"}):
            with self.subTest(bad=bad):
                options = {"base_url": self.fake.url, "enterprise_id": 42, "key_version": 1, **bad}
                with self.assertRaises(ValueError):
                    Client(secret=SECRET, **options)


PAGE = {"specVersion": "1", "page": 1, "size": 5, "total": 0, "items": []}


class FromEnvTest(TimedTestCase):
    def test_the_base_url_and_key_version_have_defaults(self) -> None:
        client = Client.from_env({"EARSHOT_ENTERPRISE_ID": "7", "EARSHOT_SECRET": SECRET})
        self.assertEqual((client.base_url, client.enterprise_id, client.key_version), ("http://127.0.0.1:8080", 7, 1))
        given = Client.from_env({"EARSHOT_ENTERPRISE_ID": "7", "EARSHOT_SECRET": SECRET, "EARSHOT_KEY_VERSION": "2",
                                 "EARSHOT_BASE_URL": "https://api.example.com/"})
        self.assertEqual((given.base_url, given.key_version), ("https://api.example.com", 2))

    def test_a_missing_variable_is_named(self) -> None:
        for environ, named in (({"EARSHOT_SECRET": SECRET}, "EARSHOT_ENTERPRISE_ID is not set"),
                               ({"EARSHOT_ENTERPRISE_ID": "7"}, "EARSHOT_SECRET is not set"),
                               ({"EARSHOT_ENTERPRISE_ID": "seven", "EARSHOT_SECRET": SECRET},
                                "EARSHOT_ENTERPRISE_ID must be a positive integer")):
            with self.subTest(environ=environ):
                with self.assertRaises(ValueError) as refused:
                    Client.from_env(environ)
                self.assertIn(named, str(refused.exception))
