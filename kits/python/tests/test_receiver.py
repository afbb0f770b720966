"""The receiver and its outbox, without a platform: what is acknowledged and what is refused, the
receipt callback sent only once the answer went out, retried, and kept across a restart."""

from __future__ import annotations

import json
import threading

from earshot_partner import EarshotError, PushEvent, Receiver
from earshot_partner.envelope import load_key, seal

from .pushes import JSON, OTHER_SECRET, SECRET, SET_A, ReceiverCase, code_of, event, sealed
from .support import wait_for


class AcknowledgedTest(ReceiverCase):
    def test_a_push_is_stored_answered_2000_and_called_back_only_after_the_answer_went_out(self) -> None:
        pushed = event("aud_new")
        answer = self.receiver.handle_push(sealed(pushed), JSON)
        self.assertEqual(answer, (200, answer.body))
        self.assertEqual(json.loads(answer.body)["code"], 2000)
        [stored] = self.events
        self.assertEqual((stored.event_id, stored.audio_id, stored.data), (pushed["eventId"], "aud_new", pushed["data"]))
        # Held until the answer is sent, whatever the outbox's threads do meanwhile.
        self.assertEqual(self.state_of(pushed["eventId"]), "held")
        self.assertEqual(self.confirm.calls, [])
        answer.after_response()
        self.assertEqual(self.confirm.wait_for(1), ["aud_new"])
        self.wait_for_state(pushed["eventId"], "confirmed")

    def test_the_same_envelope_again_is_refused_as_a_replay_and_not_stored_again(self) -> None:
        body = sealed(event())
        self.assertEqual(code_of(self.receiver.handle_push(body, JSON)), 2000)
        self.assertEqual(code_of(self.receiver.handle_push(body, JSON)), 4090)
        self.assertEqual(len(self.events), 1)

    def test_a_replay_is_refused_by_a_new_receiver_on_the_same_file_too(self) -> None:
        body = sealed(event())
        self.assertEqual(code_of(self.receiver.handle_push(body, JSON)), 2000)
        self.outbox.close()
        self.outbox = self.open_outbox()
        self.assertEqual(code_of(self.make_receiver().handle_push(body, JSON)), 4090)

    def test_the_same_event_pushed_again_is_acknowledged_without_storing_it_and_called_back_again(self) -> None:
        pushed = event("aud_again")
        first = self.receiver.handle_push(sealed(pushed), JSON)
        first.after_response()
        self.confirm.wait_for(1)
        self.wait_for_state(pushed["eventId"], "confirmed")
        again = self.receiver.handle_push(sealed(pushed), JSON)
        self.assertEqual(json.loads(again.body), {"code": 2000, "msg": "success (already received)"})
        self.assertEqual(len(self.events), 1)
        self.assertEqual(self.states_of(pushed["eventId"]), ["confirmed", "held"])
        again.after_response()
        self.assertEqual(self.confirm.wait_for(2), ["aud_again", "aud_again"])

    def test_unknown_fields_in_the_event_and_its_data_are_accepted_and_kept(self) -> None:
        data = {**SET_A, "recordedAt": "2026-11-02T09:00:00+08:00", "future": {"x": 1}}
        pushed = event("aud_extra", "recording.transcript_ready", data=data, traceId="t-1")
        self.assertEqual(code_of(self.receiver.handle_push(sealed(pushed), JSON)), 2000)
        [stored] = self.events
        self.assertEqual(stored.data["recordedAt"], "2026-11-02T09:00:00+08:00")
        self.assertEqual(stored.raw["traceId"], "t-1")
        self.assertEqual(stored.sentences, [{"text": "Hello.", "beginTime": 0, "endTime": 900}])

    def test_a_deletion_is_handed_over_and_its_callback_confirms_the_erasure_after_the_answer(self) -> None:
        pushed = event("aud_gone", "recording.deleted")
        answer = self.receiver.handle_push(sealed(pushed), JSON)
        self.assertEqual(code_of(answer), 2000)
        self.assertTrue(self.events[0].is_deletion)
        self.assertEqual(self.state_of(pushed["eventId"]), "held")
        answer.after_response()
        self.assertEqual(self.confirm.wait_for(1), ["aud_gone"])
        self.assertEqual(self.confirm.erasures, ["aud_gone"])
        self.wait_for_state(pushed["eventId"], "confirmed")
        self.assertEqual([each["erased"] for each in self.outbox.callbacks()], [True])

    def test_a_push_under_either_key_of_a_rotation_is_accepted_and_a_third_refused(self) -> None:
        receiver = self.make_receiver(secret=None, keys={1: SECRET, 2: OTHER_SECRET})
        self.assertEqual(code_of(receiver.handle_push(sealed(event(), SECRET, 1), JSON)), 2000)
        self.assertEqual(code_of(receiver.handle_push(sealed(event(), OTHER_SECRET, 2), JSON)), 2000)
        self.assertEqual(code_of(receiver.handle_push(sealed(event(), SECRET, 3), JSON)), 4012)
        only_two = self.make_receiver(secret=OTHER_SECRET, key_version=2)
        self.assertEqual(code_of(only_two.handle_push(sealed(event(), OTHER_SECRET, 1), JSON)), 4012)

    def test_on_event_failing_is_answered_5000_and_nothing_recorded_so_a_repush_stores_it(self) -> None:
        failures = [RuntimeError("disk full")]

        def store(pushed: PushEvent) -> None:
            if failures:
                raise failures.pop()
            self.events.append(pushed)

        receiver = Receiver(secret=SECRET, outbox=self.outbox, on_event=store)
        pushed = event("aud_retry")
        self.assertEqual(code_of(receiver.handle_push(sealed(pushed), JSON)), 5000)
        self.assertEqual(self.outbox.callbacks(), [])
        self.assertEqual(code_of(receiver.handle_push(sealed(pushed), JSON)), 2000)
        self.assertEqual([each.audio_id for each in self.events], ["aud_retry"])

    def test_the_same_event_pushed_twice_at_once_is_stored_once(self) -> None:
        entered, release = threading.Event(), threading.Event()
        calls: list[str] = []

        def slow_store(pushed: PushEvent) -> None:
            calls.append(pushed.event_id)
            entered.set()
            release.wait(10)

        receiver = Receiver(secret=SECRET, outbox=self.outbox, on_event=slow_store)
        pushed = event("aud_twice")
        answers: list[int] = []
        first = threading.Thread(target=lambda: answers.append(code_of(receiver.handle_push(sealed(pushed), JSON))))
        first.start()
        self.assertTrue(entered.wait(10))
        second = threading.Thread(target=lambda: answers.append(code_of(receiver.handle_push(sealed(pushed), JSON))))
        second.start()
        release.set()
        first.join(10)
        second.join(10)
        self.assertEqual((answers, calls), ([2000, 2000], [pushed["eventId"]]))


class CheckSequenceTest(ReceiverCase):
    def test_a_receiver_check_series_gets_the_answers_and_callbacks_it_expects(self) -> None:
        """What `earshot endpoints check` pushes (header X-Earshot-Check: 1, audioIds check_…)."""
        headers = {**JSON, "X-Earshot-Check": "1"}
        steps: list = []  # ("answer" | "callback", audioId), in the order they happened
        self.confirm.before_call = lambda audio_id: steps.append(("callback", audio_id))

        def push(body: bytes, audio_id: str) -> int:
            answer = self.receiver.handle_push(body, headers)
            if code_of(answer) == 2000:
                steps.append(("answer", audio_id))
            answer.after_response()  # the answer was sent
            return code_of(answer)

        valid = event("check_valid")
        self.assertEqual(push(sealed(valid), "check_valid"), 2000)
        self.assertEqual(push(sealed(valid), "check_valid"), 2000)  # the same eventId, a fresh nonce
        tampered = json.loads(sealed(event("check_tampered")))
        tampered["ciphertext"] = ("A" if tampered["ciphertext"][0] != "A" else "B") + tampered["ciphertext"][1:]
        self.assertEqual(push(json.dumps(tampered).encode(), "check_tampered"), 4012)
        self.assertEqual(push(sealed(event("check_other_key"), OTHER_SECRET), "check_other_key"), 4012)
        self.assertEqual(push(b'{"not": "an envelope"}', "-"), 4000)
        twice = sealed(event("check_twice"))
        self.assertEqual((push(twice, "check_twice"), push(twice, "check_twice")), (2000, 4090))
        extra = event("check_extra", data={**SET_A, "recordedAt": "2026-11-02T09:00:00Z", "x": 1}, y=[2])
        self.assertEqual(push(sealed(extra), "check_extra"), 2000)
        self.assertEqual(push(sealed(event("check_deleted", "recording.deleted")), "check_deleted"), 2000)
        # A callback for each acknowledged push of a recording, none for the deletion ...
        calls = self.confirm.wait_for(4)
        self.assertEqual(sorted(calls), ["check_extra", "check_twice", "check_valid", "check_valid"])
        wait_for(lambda: {each["state"] for each in self.outbox.callbacks()} == {"confirmed"}, 10.0,
                 "every callback confirmed")
        # ... and the n-th callback of a recording only once its n-th answer was sent.
        for index, (kind, audio_id) in enumerate(steps):
            if kind == "callback":
                before = steps[: index + 1]
                self.assertLessEqual(before.count(("callback", audio_id)), before.count(("answer", audio_id)))
        # ... and none of it handed to on_event.
        self.assertEqual([each.audio_id for each in self.events], [])

    def test_only_the_header_and_a_check_audio_id_together_make_a_check_push(self) -> None:
        with_header = {**JSON, "X-Earshot-Check": "1"}
        for pushed, headers in ((event("aud_real"), with_header), (event("check_no_header"), JSON),
                                (event("check_other_value"), {**JSON, "X-Earshot-Check": "0"})):
            with self.subTest(audio_id=pushed["audioId"]):
                self.assertEqual(code_of(self.receiver.handle_push(sealed(pushed), headers)), 2000)
        self.assertEqual([each.audio_id for each in self.events], ["aud_real", "check_no_header", "check_other_value"])


class RefusedTest(ReceiverCase):
    def assert_refused(self, body: bytes, code: int, headers: dict = JSON) -> None:
        self.assertEqual(code_of(self.receiver.handle_push(body, headers)), code)
        self.assertEqual((self.events, self.outbox.callbacks()), ([], []))

    def test_a_tampered_tag_and_another_key_do_not_decrypt(self) -> None:
        envelope = json.loads(sealed(event()))
        tag = bytearray(envelope["tag"].encode())
        tag[0] = ord("A") if tag[0] != ord("A") else ord("B")
        self.assert_refused(json.dumps({**envelope, "tag": tag.decode()}).encode(), 4012)
        self.assert_refused(sealed(event(), OTHER_SECRET), 4012)

    def test_what_is_not_an_envelope_is_an_invalid_request(self) -> None:
        self.assert_refused(b'{"hello": "world"}', 4000)
        self.assert_refused(b"not json", 4000)
        self.assert_refused(b"\xff\xfe", 4000)
        self.assert_refused(b"", 4000)

    def test_an_event_breaking_the_protocol_is_refused_naming_the_field(self) -> None:
        for fields, name in (({"occurredAt": "yesterday"}, "occurredAt"), ({"eventType": "recording.moved"}, "eventType"),
                             ({"data": {"title": "no device"}}, "data.deviceUid"), ({"audioId": ""}, "audioId"),
                             ({"data": {**SET_A, "transcriptSentences": "[1]"}}, "data.transcriptSentences")):
            with self.subTest(name=name):
                answer = self.receiver.handle_push(sealed(event(**fields)), JSON)
                self.assertEqual(code_of(answer), 4001)
                self.assertTrue(json.loads(answer.body)["msg"].startswith(name))
        mismatched = seal(load_key(SECRET), 1, "another-event", event())
        self.assert_refused(json.dumps(mismatched).encode(), 4001)

    def test_content_type_and_size_are_checked_first(self) -> None:
        self.assert_refused(sealed(event()), 4150, {"Content-Type": "text/plain"})
        self.assert_refused(sealed(event()), 4150, {})
        self.assertEqual(code_of(self.receiver.handle_push(sealed(event()), {"content-type": "Application/JSON; charset=utf-8"})), 2000)
        small = self.make_receiver(body_limit=100)
        self.assertEqual(code_of(small.handle_push(sealed(event()), JSON)), 4130)


class OutboxTest(ReceiverCase):
    def test_a_failing_callback_is_retried_until_confirmed(self) -> None:
        self.confirm.fail_with = [EarshotError(5030, "unavailable"), ConnectionResetError("reset")]
        pushed = event("aud_flaky")
        self.receiver.handle_push(sealed(pushed), JSON).after_response()
        self.confirm.wait_for(3)
        self.wait_for_state(pushed["eventId"], "confirmed")
        [row] = self.outbox.callbacks()
        self.assertEqual((row["attempts"], row["lastError"]), (3, None))

    def test_a_refusal_no_retry_can_change_fails_the_callback_for_good(self) -> None:
        self.confirm.fail_with = [EarshotError(4040, "no such recording")]
        pushed = event("aud_unknown")
        self.receiver.handle_push(sealed(pushed), JSON).after_response()
        self.wait_for_state(pushed["eventId"], "failed")
        self.assertEqual(self.confirm.calls, ["aud_unknown"])

    def test_a_callback_recorded_but_not_sent_is_sent_by_the_next_outbox_on_the_file(self) -> None:
        self.outbox.close()
        self.outbox = self.open_outbox(start=False)
        pushed = event("aud_restart")
        self.make_receiver().handle_push(sealed(pushed), JSON).after_response()
        self.assertEqual(self.state_of(pushed["eventId"]), "pending")
        self.outbox.close()
        self.outbox = self.open_outbox()
        self.assertEqual(self.confirm.wait_for(1), ["aud_restart"])
        self.wait_for_state(pushed["eventId"], "confirmed")

    def test_a_held_callback_whose_answer_never_went_out_is_sent_after_the_grace(self) -> None:
        self.outbox.close()
        self.outbox = self.open_outbox(answer_grace=0.2, poll_interval=0.05)
        pushed = event("aud_unanswered")
        self.make_receiver().handle_push(sealed(pushed), JSON)  # after_response never called
        self.assertEqual(self.confirm.wait_for(1), ["aud_unanswered"])

    def test_a_nonce_is_accepted_again_only_once_the_replay_window_passed(self) -> None:
        now = [1000.0]
        self.outbox.close()
        self.outbox = self.open_outbox(replay_window=60.0, clock=lambda: now[0], start=False)
        self.assertEqual(self.outbox.admit(1, "nonce-a", "evt-a"), "new")
        self.assertEqual(self.outbox.admit(1, "nonce-a", "evt-a"), "replayed")
        self.assertEqual(self.outbox.admit(2, "nonce-a", "evt-a"), "new")
        now[0] += 61
        self.assertEqual(self.outbox.admit(1, "nonce-a", "evt-a"), "new")
