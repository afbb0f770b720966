"""Downloading a recording's audio against a scripted partner API and a loopback media server: cut
connections resumed with Range and If-Range, expired links replaced, digests checked, gone audio.
(test_audio_platform.py downloads from the real platform.)"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile

from earshot_partner import Client, EarshotDigestMismatchError, EarshotError, EarshotNoAudioError
from earshot_partner.envelope import load_key

from .fake_platform import FakePlatform, ok
from .media_server import MediaServer
from .support import TimedTestCase

SECRET = "wv+7DCv0af3nC9Fme+s3OZBWDJc16kPLzKja6ht0Vq0="
AUDIOS = "/openapi/v1/audios"
SIZE = 512 * 1024


class DownloadTest(TimedTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.media = MediaServer()
        self.addCleanup(self.media.close)
        self.fake = FakePlatform(load_key(SECRET))
        self.addCleanup(self.fake.close)
        self.recordings: dict[str, dict] = {}
        self.fake.answers[AUDIOS] = [self.query]
        self.client = Client(self.fake.url, 42, 1, SECRET, sleep=lambda seconds: None)
        self.directory = tempfile.mkdtemp(prefix="earshot-download-")
        self.addCleanup(shutil.rmtree, self.directory)

    def query(self, request: dict) -> tuple:
        """The partner API's query: the recording asked for, with a fresh link to its audio each time."""
        audio_id = request["plaintext"]["audioId"]
        data = self.recordings[audio_id]() if audio_id in self.recordings else None
        items = [] if data is None else [{"audioId": audio_id, "data": data}]
        page = {"specVersion": "1", "page": 1, "size": 20, "total": len(items), "items": items}
        return 200, ok(self.fake.sealed(request, page))

    def recording(self, audio_id: str, size: int = SIZE, plain: bool = False) -> tuple[bytes, str]:
        """A recording with ``size`` bytes of audio; its bytes and the path to download it to."""
        body = os.urandom(size)
        self.media.put(audio_id, body, plain)
        self.recordings[audio_id] = lambda: {"deviceUid": "DEV-1", "title": audio_id,
                                             "denoiseUrl": self.media.link(audio_id), "recordDuration": 9}
        return body, os.path.join(self.directory, f"{audio_id}.mp3")

    def queries(self) -> list:
        return [each["plaintext"]["audioId"] for each in self.fake.requests_to(AUDIOS)]

    def leftovers(self, audio_id: str) -> list:
        return sorted(name for name in os.listdir(self.directory) if name.startswith(f"{audio_id}."))

    def assert_file(self, path: str, body: bytes) -> None:
        with open(path, "rb") as file:
            self.assertTrue(file.read() == body, "the file holds exactly the audio's bytes")

    def test_a_whole_download_is_streamed_verified_and_renamed_into_place(self) -> None:
        body, path = self.recording("aud_whole")
        progress: list = []
        downloaded = self.client.download_audio("aud_whole", path, on_progress=lambda *each: progress.append(each))
        self.assertEqual((downloaded.bytes, downloaded.content_type, downloaded.resumed, downloaded.verified),
                         (SIZE, "audio/mpeg", 0, True))
        self.assertEqual(downloaded.sha256, sha256_hex(body))
        self.assert_file(path, body)
        self.assertEqual(self.leftovers("aud_whole"), ["aud_whole.mp3"])
        self.assertEqual(progress[-1], (SIZE, SIZE))
        self.assertGreater(len(progress), 1)
        self.assertEqual(self.queries(), ["aud_whole"])
        self.assertEqual(self.media.requests_of("aud_whole"), [(None, None, 200)])

    def test_a_connection_cut_half_way_is_resumed_with_range_and_if_range(self) -> None:
        body, path = self.recording("aud_cut")
        self.media.cut_next_after(SIZE // 2)
        downloaded = self.client.download_audio("aud_cut", path)
        self.assertEqual((downloaded.resumed, downloaded.sha256), (1, sha256_hex(body)))
        self.assertEqual(self.media.requests_of("aud_cut"), [
            (None, None, 200),
            (f"bytes={SIZE // 2}-", f'"{sha256_hex(body)}"', 206),
        ])
        self.assert_file(path, body)
        self.assertEqual(self.leftovers("aud_cut"), ["aud_cut.mp3"])

    def test_an_expired_link_is_replaced_by_a_fresh_one_from_a_new_query_which_goes_on(self) -> None:
        body, path = self.recording("aud_expiring")
        self.media.cut_next_after(SIZE // 4, expire=True)
        downloaded = self.client.download_audio("aud_expiring", path)
        self.assertEqual((downloaded.resumed, downloaded.sha256), (1, sha256_hex(body)))
        self.assertEqual(self.queries(), ["aud_expiring", "aud_expiring"])
        requests = [each for each in self.media.requests if each["id"] == "aud_expiring"]
        self.assertEqual([(each["range"], each["status"]) for each in requests],
                         [(None, 200), (f"bytes={SIZE // 4}-", 403), (f"bytes={SIZE // 4}-", 206)])
        self.assertEqual(requests[0]["link"], requests[1]["link"])
        self.assertNotEqual(requests[1]["link"], requests[2]["link"], "the last request went to the fresh link")
        self.assert_file(path, body)

    def test_a_digest_mismatch_is_refused_and_the_partial_file_removed(self) -> None:
        _, path = self.recording("aud_lie")
        self.media.lie_about_digest = True
        with self.assertRaises(EarshotDigestMismatchError) as refused:
            self.client.download_audio("aud_lie", path)
        self.assertEqual(refused.exception.expected, sha256_hex(b"a lie"))
        self.assertEqual(self.leftovers("aud_lie"), [])

    def test_audio_gone_from_its_link_is_4040_and_what_an_earlier_call_left_is_removed(self) -> None:
        _, path = self.recording("aud_gone")
        leave_partial(path, b"an earlier call", '"earlier"')
        self.media.remove("aud_gone")
        with self.assertRaises(EarshotError) as refused:
            self.client.download_audio("aud_gone", path)
        self.assertEqual((refused.exception.code, refused.exception.name, refused.exception.http_status),
                         (4040, "NOT_FOUND", 404))
        self.assertEqual(self.leftovers("aud_gone"), [])

    def test_a_recording_the_query_does_not_have_is_4040_and_one_without_audio_is_typed(self) -> None:
        path = os.path.join(self.directory, "aud_none.mp3")
        leave_partial(path, b"an earlier call", '"earlier"')
        with self.assertRaises(EarshotError) as refused:
            self.client.download_audio("aud_none", path)
        self.assertEqual(refused.exception.code, 4040)
        self.assertEqual(self.leftovers("aud_none"), [])
        self.recordings["aud_text"] = lambda: {"deviceUid": "DEV-1", "title": "no audio", "transcriptId": 1}
        with self.assertRaises(EarshotNoAudioError) as no_audio:
            self.client.download_audio("aud_text", os.path.join(self.directory, "aud_text.mp3"))
        self.assertEqual(no_audio.exception.audio_id, "aud_text")

    def test_what_an_earlier_call_left_is_resumed_while_its_etag_matches(self) -> None:
        body, path = self.recording("aud_later")
        leave_partial(path, body[:1000], f'"{sha256_hex(body)}"')
        downloaded = self.client.download_audio("aud_later", path)
        self.assertEqual((downloaded.resumed, downloaded.sha256), (1, sha256_hex(body)))
        self.assertEqual([each[0] for each in self.media.requests_of("aud_later")], ["bytes=1000-"])
        self.assert_file(path, body)

    def test_a_part_of_another_file_or_longer_than_the_file_starts_over(self) -> None:
        body, path = self.recording("aud_over", size=4096)
        leave_partial(path, os.urandom(100), '"another file"')
        self.assertEqual(self.client.download_audio("aud_over", path).resumed, 0)
        leave_partial(path, os.urandom(5000), f'"{sha256_hex(body)}"')
        self.assertEqual(self.client.download_audio("aud_over", path).resumed, 0)
        self.assertEqual([each[::2] for each in self.media.requests_of("aud_over")],
                         [("bytes=100-", 200), ("bytes=5000-", 416), (None, 200)])
        self.assert_file(path, body)
        self.assertEqual(self.leftovers("aud_over"), ["aud_over.mp3"])

    def test_a_link_that_is_not_earshots_is_downloaded_unverified_and_a_cut_starts_over(self) -> None:
        body, path = self.recording("aud_plain", plain=True)
        self.media.cut_next_after(SIZE // 2)
        downloaded = self.client.download_audio("aud_plain", path)
        self.assertEqual((downloaded.verified, downloaded.resumed, downloaded.sha256), (False, 0, sha256_hex(body)))
        self.assertEqual(self.media.requests_of("aud_plain"), [(None, None, 200), (None, None, 200)])
        self.assert_file(path, body)
        self.assertEqual(self.leftovers("aud_plain"), ["aud_plain.mp3"])


def leave_partial(path: str, data: bytes, etag: str) -> None:
    with open(path + ".part", "wb") as part:
        part.write(data)
    with open(path + ".part.etag", "w", encoding="utf-8") as kept:
        kept.write(etag)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
