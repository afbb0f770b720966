"""An operator's erasure of a device, end to end against a platform: examples/receiver.py, run as the
README says, receives the device's recordings, the erasure's deletions remove their content from every
file of its directory, the platform reports the erasure confirmed, and its signed report verifies with
the key the platform publishes (and a tampered one does not)."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import sqlite3
import tempfile

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from .support import KIT, PlatformTestCase, direct_opener, read_line, recording, start_example_receiver, wait_for

ERASED_DEVICE, KEPT_DEVICE = "DEV-PY-ERASE-7", "DEV-PY-KEPT-3"


def transcribed(number: int, device_uid: str, words: str) -> dict:
    return recording(f"aud_pye_{number}", deviceUid=device_uid, title=f"Call {number} with the dentist", transcript={
        "transcriptId": 9100 + number, "transcriptText": words, "durationMs": 1800,
        "wordsCount": len(words.split()), "sentences": [{"text": words, "beginTime": 0, "endTime": 1800}]})


def canonical(report: dict) -> bytes:
    """RFC 8785 for a report of strings, integers, booleans, null, arrays and objects (no floats)."""
    return json.dumps(report, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def verifies(key: Ed25519PublicKey, report: dict, signature: bytes) -> bool:
    try:
        key.verify(signature, canonical(report))
    except InvalidSignature:
        return False
    return True


def unpadded_base64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class ErasureOnPlatformTest(PlatformTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.directory = tempfile.mkdtemp(prefix="earshot-erasure-")
        self.addCleanup(shutil.rmtree, self.directory)
        enterprise = self.platform.new_enterprise("python-kit erasure")
        self.enterprise_id = enterprise["enterpriseId"]
        env = {**os.environ, "PYTHONPATH": KIT, **enterprise["env"]}
        receiver = start_example_receiver(self, self.directory, env)
        listening = read_line(receiver.stdout, 30.0, "the receiver")
        url = re.fullmatch(r"listening on (http://127\.0\.0\.1:\d+/earshot/push)\n", listening).group(1)
        self.platform.admin.set_push_url(self.enterprise_id, url)

    def files_holding(self, content: str) -> list:
        """The names of the files of the receiver's directory whose bytes hold ``content``."""
        holding = []
        for name in sorted(os.listdir(self.directory)):
            with open(os.path.join(self.directory, name), "rb") as file:
                if content.encode() in file.read():
                    holding.append(name)
        return holding

    def test_an_erased_device_leaves_nothing_in_the_store_and_its_signed_report_verifies(self) -> None:
        admin = self.platform.admin
        erased = [transcribed(n, ERASED_DEVICE, f"private words number {n} said") for n in range(5)]
        kept = transcribed(5, KEPT_DEVICE, "words that stay")
        admin.import_recordings(self.enterprise_id, erased + [kept])
        wait_for(lambda: [each["state"] for each in admin.deliveries(self.enterprise_id)] == ["confirmed"] * 12,
                 30.0, "the audio_ready and transcript_ready pushes of the six recordings confirmed")
        contents = [ERASED_DEVICE] + [each["title"] for each in erased] + [
            each["transcript"]["transcriptText"] for each in erased]
        self.assertEqual([name for content in contents for name in self.files_holding(content)],
                         ["recordings.sqlite"] * len(contents))  # what the erasure must remove was stored

        created = admin.call("POST", f"/admin/v1/enterprises/{self.enterprise_id}/erasures",
                             {"deviceUid": ERASED_DEVICE, "reason": "ticket 42 — Zoë asked"})
        self.assertEqual(created["recordings"], 5)

        def confirmed() -> dict:
            shown = admin.call("GET", f"/admin/v1/erasures/{created['erasureId']}")
            return shown if shown["state"] == "confirmed" else {}

        erasure = wait_for(confirmed, 30.0, "the erasure confirmed")
        progress = [(each["deletions"], each["acknowledged"], each["confirmed"]) for each in erasure["endpoints"]]
        self.assertEqual(progress, [(5, 5, 5)])

        self.assertEqual({content: self.files_holding(content) for content in contents},
                         {content: [] for content in contents})
        with sqlite3.connect(os.path.join(self.directory, "recordings.sqlite")) as database:
            rows = database.execute("SELECT audio_id, event_type, data FROM recordings ORDER BY audio_id").fetchall()
        self.assertEqual([row[:2] for row in rows], [(f"aud_pye_{n}", "recording.deleted") for n in range(5)]
                         + [("aud_pye_5", "recording.transcript_ready")])
        self.assertEqual([row[2] for row in rows[:5]], [None] * 5)
        kept_data = json.loads(rows[5][2])
        self.assertEqual((kept_data["deviceUid"], kept_data["title"], kept_data["transcriptText"]),
                         (KEPT_DEVICE, kept["title"], "words that stay"))

        signed = admin.call("GET", f"/admin/v1/erasures/{created['erasureId']}/report")
        report, signature = signed["report"], unpadded_base64url(signed["signature"])
        self.assertEqual((report["state"], report["audioIds"], report["reason"]),
                         ("confirmed", [each["audioId"] for each in erased], "ticket 42 — Zoë asked"))
        self.assertNotIn(ERASED_DEVICE, json.dumps(signed))
        with direct_opener.open(f"{self.platform.partner_url}/.well-known/earshot-erasure-key", timeout=10) as answer:
            jwk = json.loads(answer.read())
        self.assertEqual((jwk["kty"], jwk["crv"], jwk["kid"]), ("OKP", "Ed25519", report["keyId"]))
        key = Ed25519PublicKey.from_public_bytes(unpadded_base64url(jwk["x"]))
        self.assertTrue(verifies(key, report, signature))
        self.assertFalse(verifies(key, {**report, "recordings": 4}, signature))
        self.assertFalse(verifies(key, {**report, "audioIds": report["audioIds"][1:]}, signature))
