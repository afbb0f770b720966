"""What the tests share: a watchdog per test, the repository's paths, a platform started once for the
whole run (``node packages/test-kit/dist/platform-process.js``), its admin API, and waiting."""

from __future__ import annotations

import atexit
import faulthandler
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request
from typing import Any, Callable, Optional

KIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPOSITORY = os.path.dirname(os.path.dirname(KIT))
VECTORS = os.path.join(REPOSITORY, "packages", "protocol", "test-data", "envelope.json")
PLATFORM_PROCESS = os.path.join(REPOSITORY, "packages", "test-kit", "dist", "platform-process.js")
ADMIN_TOKEN = "python-kit-admin-token-0123456789"

# Loopback requests must never go through a proxy from the environment.
direct_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class TimedTestCase(unittest.TestCase):
    """Each test is stopped, with every thread's stack printed, once it runs longer than ``timeout``."""

    timeout = 30.0

    def setUp(self) -> None:
        super().setUp()
        faulthandler.dump_traceback_later(self.timeout, exit=True)
        self.addCleanup(faulthandler.cancel_dump_traceback_later)


class PlatformTestCase(TimedTestCase):
    """A test against the run's platform, started (once) before the class's tests and their watchdog."""

    timeout = 60.0
    platform: "Platform"

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.platform = Platform.shared()


def wait_for(condition: Callable[[], Any], timeout: float = 15.0, what: str = "the condition") -> Any:
    """Polls until condition() is truthy and returns it; fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def _die_with_parent() -> None:
    """Run in the child: SIGKILL it when the test process dies, even by its watchdog's exit."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def spawn(args: list, env: dict, **options: Any) -> subprocess.Popen:
    return subprocess.Popen(args, env=env, preexec_fn=_die_with_parent, **options)


def start_example_receiver(case: unittest.TestCase, directory: str, env: dict) -> subprocess.Popen:
    """examples/receiver.py run in ``directory`` (its sqlite files there) on a free port; killed at cleanup."""
    receiver = spawn([sys.executable, os.path.join(KIT, "examples", "receiver.py")], {**env, "PORT": "0"},
                     cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def stop() -> None:
        if receiver.poll() is None:
            receiver.kill()
        receiver.wait()
        receiver.stdout.close()

    case.addCleanup(stop)
    return receiver


def read_line(stream: Any, timeout: float, what: str) -> str:
    """One line of a child's output, or a failure after ``timeout`` seconds."""
    lines: "queue.Queue[str]" = queue.Queue()
    threading.Thread(target=lambda: lines.put(stream.readline()), daemon=True).start()
    try:
        line = lines.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError(f"no line from {what} within {timeout} s") from None
    if not line:
        raise AssertionError(f"{what} ended without a line")
    return line


class Platform:
    """One platform for the whole run, in memory, pushing to loopback, retrying pushes after 1 s."""

    _instance: Optional["Platform"] = None

    @classmethod
    def shared(cls) -> "Platform":
        if cls._instance is None:
            cls._instance = cls()
            atexit.register(cls._instance.stop)
        return cls._instance

    def __init__(self, **settings: str) -> None:
        """``settings``: more of the platform's environment (EARSHOT_PUBLIC_URL=…)."""
        if not os.path.exists(PLATFORM_PROCESS):
            raise AssertionError(f"{PLATFORM_PROCESS} is missing: run `npm ci` (or `npm run build`) first")
        env = {
            "PATH": os.environ.get("PATH", ""),
            "EARSHOT_DATA_DIR": "memory://",
            "EARSHOT_PORT": "0",
            "EARSHOT_ADMIN_PORT": "0",
            "EARSHOT_ADMIN_TOKEN": ADMIN_TOKEN,
            "EARSHOT_PUSH_ALLOW_PRIVATE": "1",
            "EARSHOT_PUSH_RETRY_SCHEDULE": "1,1,1,1,1,2,2,2,2,2",
            "EARSHOT_LOG_LEVEL": "warn",
            **settings,
        }
        if "TMPDIR" in os.environ:
            env["TMPDIR"] = os.environ["TMPDIR"]
        node = os.environ.get("EARSHOT_NODE", "node")
        self.process = spawn(
            [node, PLATFORM_PROCESS], env, stdout=subprocess.PIPE, stderr=sys.stderr, text=True
        )
        started = json.loads(read_line(self.process.stdout, 60.0, "the platform"))
        self.partner_url: str = started["partnerUrl"]
        self.admin_url: str = started["adminUrl"]
        self.admin = Admin(self.admin_url, started["adminToken"])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def new_enterprise(self, name: str, push_url: Optional[str] = None) -> dict:
        """``{enterpriseId, keyVersion, secret}`` of a new enterprise, and ``env`` for a partner process."""
        created = self.admin.call("POST", "/admin/v1/enterprises", {"name": name, "pushUrl": push_url})
        created["env"] = {
            "EARSHOT_BASE_URL": self.partner_url,
            "EARSHOT_ENTERPRISE_ID": str(created["enterpriseId"]),
            "EARSHOT_KEY_VERSION": str(created["keyVersion"]),
            "EARSHOT_SECRET": created["secret"],
        }
        return created


class Admin:
    """The platform's admin API (docs/operator-guide.md, and GET /openapi.json on the admin listener)."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.token = token

    def call(self, method: str, path: str, body: Any = None, *, raw: Optional[bytes] = None,
             content_type: str = "application/json") -> Any:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            request.add_header("Content-Type", content_type)
        try:
            with direct_opener.open(request, timeout=60) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as error:
            raise AssertionError(f"{method} {path}: HTTP {error.code} {error.read().decode()}") from None
        return text if content_type != "application/json" else json.loads(text or "null")

    def import_recordings(self, enterprise_id: int, recordings: list) -> dict:
        """The JSON Lines import; its answer's last line (the summary)."""
        lines = "".join(json.dumps(each) + "\n" for each in recordings).encode()
        answer = self.call("POST", f"/admin/v1/enterprises/{enterprise_id}/recordings/import", raw=lines,
                           content_type="application/x-ndjson")
        summary = json.loads(answer.strip().splitlines()[-1])
        if "error" in summary:
            raise AssertionError(f"import failed: {summary}")
        return summary

    def upload_audio(self, enterprise_id: int, audio_id: str, audio: bytes, content_type: str = "audio/wav") -> dict:
        """Stores the recording's audio in Earshot, as `earshot recordings upload-audio` does."""
        path = f"/admin/v1/enterprises/{enterprise_id}/recordings/{audio_id}/audio"
        return json.loads(self.call("PUT", path, raw=audio, content_type=content_type))

    def set_push_url(self, enterprise_id: int, url: Optional[str]) -> None:
        self.call("PUT", f"/admin/v1/enterprises/{enterprise_id}/push-url", {"pushUrl": url})

    def deliveries(self, enterprise_id: int, audio_id: Optional[str] = None) -> list:
        query = f"?enterpriseId={enterprise_id}" + (f"&audioId={audio_id}" if audio_id else "")
        return self.call("GET", f"/admin/v1/deliveries{query}")["deliveries"]

    def wait_for_delivery(self, enterprise_id: int, audio_id: str, state: str, timeout: float = 40.0) -> dict:
        def reached() -> Optional[dict]:
            found = self.deliveries(enterprise_id, audio_id)
            return next((each for each in found if each["state"] == state), None)

        return wait_for(reached, timeout, f"a delivery of {audio_id} in state {state}")


def recording(audio_id: str, **fields: Any) -> dict:
    """An import line: an audio-only recording (set B) unless fields say otherwise."""
    line = {
        "audioId": audio_id,
        "deviceUid": "DEV-PY-1",
        "title": f"Recording {audio_id}",
        "recordedAt": "2026-11-02T09:00:00+08:00",
        "denoiseUrl": f"https://cdn.example.com/{audio_id}.mp3",
        "recordDuration": 61000,
    }
    line.update(fields)
    return line
