"""The README's quick start is examples/quickstart.py, and it runs against a platform."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from .support import KIT, PlatformTestCase, recording


def marked_block(marker: str) -> str:
    """The fenced code block right after ``<!-- marker -->`` in the README."""
    with open(os.path.join(KIT, "README.md"), encoding="utf-8") as file:
        readme = file.read()
    found = re.search(rf"<!-- {re.escape(marker)} -->\n```[a-z]*\n(.*?)```\n", readme, re.DOTALL)
    if not found:
        raise AssertionError(f"README.md has no code block marked <!-- {marker} -->")
    return found.group(1)


class QuickStartTest(PlatformTestCase):
    def test_the_readme_shows_examples_quickstart_py_exactly(self) -> None:
        with open(os.path.join(KIT, "examples", "quickstart.py"), encoding="utf-8") as file:
            self.assertEqual(marked_block("quickstart: examples/quickstart.py"), file.read())

    def test_the_quick_start_runs_against_the_platform(self) -> None:
        platform = self.platform
        enterprise = platform.new_enterprise("python-kit quick start")
        platform.admin.import_recordings(enterprise["enterpriseId"], [
            recording("aud_pyqs_standup", deviceUid="DEV-0001", title="Standup"),
            recording("aud_pyqs_interview", deviceUid="DEV-0002", title="Interview",
                      recordedAt="2026-11-02T06:00:00Z",
                      transcript={"transcriptId": 7002, "transcriptText": "Welcome.", "durationMs": 2100,
                                  "wordsCount": 1,
                                  "sentences": [{"text": "Welcome.", "beginTime": 0, "endTime": 2100}]}),
        ])
        env = {**os.environ, **enterprise["env"], "PYTHONPATH": KIT}
        finished = subprocess.run([sys.executable, os.path.join(KIT, "examples", "quickstart.py")], env=env,
                                  capture_output=True, text=True, timeout=30)
        self.assertEqual(finished.returncode, 0, finished.stderr)
        lines = finished.stdout.splitlines()
        self.assertEqual(lines[:3], [
            "DEV-0001 has 1 recordings",
            "aud_pyqs_interview Interview transcript",
            "aud_pyqs_standup Standup audio",
        ])
        # One import: the feed numbers its two recordings in an order of its own.
        self.assertEqual([line.split()[0] for line in lines[3:5]], ["1", "2"])
        self.assertEqual(sorted(line.split(" ", 1)[1] for line in lines[3:5]),
                         ["created aud_pyqs_interview", "created aud_pyqs_standup"])
        self.assertRegex(lines[5], r"^refused: 4040 NOT_FOUND: .*aud_never_pushed.* \(requestId [0-9a-f-]{36}\)$")
        self.assertEqual(len(lines), 6)
