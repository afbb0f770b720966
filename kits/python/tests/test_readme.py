"""The README's marked blocks: the files it says to save are the examples, word for word, and its
quick start runs against a platform. (test_examples.py runs the receiver and the download.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from .support import KIT, PlatformTestCase, TimedTestCase, recording

EXAMPLES = ("quickstart.py", "receiver.py", "download.py")


def marked_block(name: str) -> str:
    """The fenced code block right after ``<!-- newcomer: name -->`` in the README (blank lines between)."""
    with open(os.path.join(KIT, "README.md"), encoding="utf-8") as file:
        readme = file.read()
    found = re.search(rf"<!-- newcomer: {re.escape(name)} -->\n(?:[ \t]*\n)*```[a-z]*\n(.*?)```\n", readme, re.DOTALL)
    if not found:
        raise AssertionError(f"README.md has no code block marked <!-- newcomer: {name} -->")
    return found.group(1)


def example(name: str) -> str:
    with open(os.path.join(KIT, "examples", name), encoding="utf-8") as file:
        return file.read()


class ReadmeTest(TimedTestCase):
    def test_the_files_to_save_are_the_examples_exactly(self) -> None:
        for name in EXAMPLES:
            with self.subTest(name=name):
                self.assertEqual(marked_block(f"python-file {name}"), example(name))

    def test_the_shell_blocks_export_only_the_enterprise_and_run_the_saved_files(self) -> None:
        credentials = "export EARSHOT_ENTERPRISE_ID=1 EARSHOT_SECRET='<the printed secret>'\n"
        self.assertEqual(marked_block("python-quickstart"), credentials + ".venv/bin/python quickstart.py\n")
        self.assertEqual(marked_block("python-receiver"), credentials + ".venv/bin/python receiver.py\n")
        self.assertEqual(marked_block("python-download"),
                         credentials + ".venv/bin/python download.py aud_hello_python hello.wav\n")
        push = marked_block("python-push")
        self.assertIn("set-push-url 1 http://127.0.0.1:8000/earshot/push\n", push)
        self.assertIn("upload-audio aud_hello_python take.wav --enterprise 1", push)


class QuickStartTest(PlatformTestCase):
    def test_the_quick_start_runs_against_the_platform(self) -> None:
        platform = self.platform
        enterprise = platform.new_enterprise("python-kit quick start")
        platform.admin.import_recordings(enterprise["enterpriseId"], [
            recording("aud_pyqs_standup", deviceUid="REC-ALPHA-01", title="Standup"),
            recording("aud_pyqs_interview", deviceUid="REC-ALPHA-01", title="Interview",
                      recordedAt="2026-11-02T06:00:00Z",
                      transcript={"transcriptId": 7002, "transcriptText": "Welcome.", "durationMs": 2100,
                                  "wordsCount": 1,
                                  "sentences": [{"text": "Welcome.", "beginTime": 0, "endTime": 2100}]}),
            recording("aud_pyqs_other", deviceUid="WEAR-BETA-07"),
        ])
        # As the README runs it, but for where the platform is; the key version is left to its default.
        env = {**os.environ, "PYTHONPATH": KIT, "EARSHOT_BASE_URL": platform.partner_url,
               "EARSHOT_ENTERPRISE_ID": str(enterprise["enterpriseId"]), "EARSHOT_SECRET": enterprise["secret"]}
        finished = subprocess.run([sys.executable, os.path.join(KIT, "examples", "quickstart.py")], env=env,
                                  capture_output=True, text=True, timeout=30)
        self.assertEqual(finished.returncode, 0, finished.stderr)
        lines = finished.stdout.splitlines()
        self.assertEqual(lines[:5], [
            "REC-ALPHA-01 has 2 recordings; the newest:",
            "aud_pyqs_interview Interview transcript",
            "aud_pyqs_standup Standup audio",
            "3 recordings in all",
            f"3 changes in the feed, up to cursor {lines[4].rsplit(' ', 1)[1]}",
        ])
        self.assertRegex(lines[5], r"^refused: 4040 NOT_FOUND: .*aud_never_pushed.* \(requestId [0-9a-f-]{36}\)$")
        self.assertEqual(len(lines), 6)
