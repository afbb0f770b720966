"""The README's receiver and download as a partner runs them, against a platform: examples/receiver.py
stores each push in its sqlite table and has it confirmed, examples/download.py prints the SHA-256 of
the audio Earshot stores, and SIGTERM stops the receiver."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile

from .support import KIT, PlatformTestCase, read_line, recording, start_example_receiver, wait_for


class ExamplesTest(PlatformTestCase):
    timeout = 90.0

    def setUp(self) -> None:
        super().setUp()
        self.directory = tempfile.mkdtemp(prefix="earshot-examples-")
        self.addCleanup(shutil.rmtree, self.directory)
        self.enterprise = self.platform.new_enterprise("python-kit examples")
        self.env = {**os.environ, "PYTHONPATH": KIT, "EARSHOT_BASE_URL": self.platform.partner_url,
                    "EARSHOT_ENTERPRISE_ID": str(self.enterprise["enterpriseId"]),
                    "EARSHOT_SECRET": self.enterprise["secret"]}

    def stored_rows(self) -> list:
        with sqlite3.connect(os.path.join(self.directory, "recordings.sqlite")) as database:
            return database.execute("SELECT audio_id, event_type, data IS NULL FROM recordings").fetchall()

    def wait_until_confirmed(self, event_types: list) -> None:
        """Until every delivery of aud_hello_python is confirmed: one of each of ``event_types``."""

        def confirmed() -> bool:
            deliveries = self.platform.admin.deliveries(self.enterprise["enterpriseId"], "aud_hello_python")
            return sorted((each["eventType"], each["state"]) for each in deliveries) == [
                (event_type, "confirmed") for event_type in sorted(event_types)]

        wait_for(confirmed, 40.0, f"the deliveries of {', '.join(event_types)} confirmed")

    def test_the_receiver_stores_each_push_and_the_download_prints_the_audios_sha256(self) -> None:
        admin, enterprise_id = self.platform.admin, self.enterprise["enterpriseId"]
        receiver = start_example_receiver(self, self.directory, self.env)
        listening = read_line(receiver.stdout, 30.0, "the receiver")
        url = re.fullmatch(r"listening on (http://127\.0\.0\.1:\d+/earshot/push)\n", listening).group(1)
        admin.set_push_url(enterprise_id, url)

        admin.import_recordings(enterprise_id, [recording("aud_hello_python")])
        self.assertEqual(read_line(receiver.stdout, 30.0, "the receiver"), "stored aud_hello_python recording.audio_ready\n")
        audio = os.urandom(300_000)
        admin.upload_audio(enterprise_id, "aud_hello_python", audio)
        self.assertEqual(read_line(receiver.stdout, 30.0, "the receiver"), "stored aud_hello_python recording.updated\n")
        self.assertEqual(self.stored_rows(), [("aud_hello_python", "recording.updated", 0)])
        self.wait_until_confirmed(["recording.audio_ready", "recording.updated"])

        finished = subprocess.run([sys.executable, os.path.join(KIT, "examples", "download.py"), "aud_hello_python",
                                   "hello.wav"], cwd=self.directory, env=self.env, capture_output=True, text=True,
                                  timeout=30)
        self.assertEqual(finished.returncode, 0, finished.stderr)
        self.assertIn(f"sha256 {hashlib.sha256(audio).hexdigest()} (verified)", finished.stdout)

        admin.call("DELETE", f"/admin/v1/enterprises/{enterprise_id}/recordings/aud_hello_python")
        self.assertEqual(read_line(receiver.stdout, 30.0, "the receiver"), "stored aud_hello_python recording.deleted\n")
        self.assertEqual(self.stored_rows(), [("aud_hello_python", "recording.deleted", 1)])
        self.wait_until_confirmed(["recording.audio_ready", "recording.updated", "recording.deleted"])
        receiver.send_signal(signal.SIGTERM)
        self.assertEqual(receiver.wait(10), -signal.SIGTERM)
