"""Audio stored in a real platform (uploaded through the admin API), downloaded by the kit: through a
proxy that cuts the first answer half-way, from a link that expired, and from a recording deleted.

The platform is one of this module's own: its links point at the proxy (EARSHOT_PUBLIC_URL) and expire
after 2 s (EARSHOT_MEDIA_URL_TTL), so a link can be seen expiring within a test."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.error
import urllib.request

from earshot_partner import Client, EarshotError
from earshot_partner.audio_download import LinkSettings, audio_link_of, download_from_link

from .cutting_proxy import CuttingProxy
from .support import Platform, TimedTestCase, direct_opener, recording, wait_for

LINK_SECONDS = 2


class StoredAudioTest(TimedTestCase):
    timeout = 90.0

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.proxy = CuttingProxy()
        cls.addClassCleanup(cls.proxy.close)
        cls.platform = Platform(EARSHOT_PUBLIC_URL=cls.proxy.url, EARSHOT_MEDIA_URL_TTL=str(LINK_SECONDS))
        cls.addClassCleanup(cls.platform.stop)
        cls.proxy.target = int(cls.platform.partner_url.rsplit(":", 1)[1])
        cls.enterprise = cls.platform.new_enterprise("python-kit audio")

    def setUp(self) -> None:
        super().setUp()
        self.client = Client(self.platform.partner_url, self.enterprise["enterpriseId"], 1, self.enterprise["secret"])
        self.directory = tempfile.mkdtemp(prefix="earshot-stored-audio-")
        self.addCleanup(shutil.rmtree, self.directory)

    def stored(self, audio_id: str, size: int) -> bytes:
        """A recording whose audio, ``size`` random bytes, Earshot stores."""
        audio = os.urandom(size)
        enterprise_id = self.enterprise["enterpriseId"]
        self.platform.admin.import_recordings(enterprise_id, [recording(audio_id)])
        uploaded = self.platform.admin.upload_audio(enterprise_id, audio_id, audio)
        self.assertEqual(uploaded["sha256"], hashlib.sha256(audio).hexdigest())
        return audio

    def test_a_download_cut_half_way_is_resumed_and_its_digest_checked(self) -> None:
        audio = self.stored("aud_pya_cut", 2_000_000)
        self.assertTrue(audio_link_of(self.client.query_audios, "aud_pya_cut").startswith(f"{self.proxy.url}/media/v1/"))
        self.proxy.cut_next_after(1_000_000)
        path = os.path.join(self.directory, "cut.wav")
        downloaded = self.client.download_audio("aud_pya_cut", path)
        self.assertEqual(self.proxy.cuts, 1, "the first answer was cut")
        self.assertEqual((downloaded.resumed, downloaded.verified, downloaded.content_type), (1, True, "audio/wav"))
        self.assertEqual(downloaded.sha256, hashlib.sha256(audio).hexdigest())
        with open(path, "rb") as file:
            self.assertTrue(file.read() == audio)

    def test_an_expired_link_is_replaced_by_a_fresh_one_and_a_deleted_recording_is_4040(self) -> None:
        audio = self.stored("aud_pya_expired", 50_000)
        link = audio_link_of(self.client.query_audios, "aud_pya_expired")
        wait_for(lambda: status_of(link) == 403, LINK_SECONDS + 5.0, "the link to expire")
        fresh: list = []

        def fresh_link() -> str:
            fresh.append(audio_link_of(self.client.query_audios, "aud_pya_expired"))
            return fresh[-1]

        settings = LinkSettings(fresh_link=fresh_link, opener=direct_opener, timeout=10.0,
                                retries=3, sleep=lambda seconds: None)
        downloaded = download_from_link(link, os.path.join(self.directory, "fresh.wav"), settings)
        self.assertEqual((len(fresh), downloaded.sha256), (1, hashlib.sha256(audio).hexdigest()))

        enterprise_id = self.enterprise["enterpriseId"]
        self.platform.admin.call("DELETE", f"/admin/v1/enterprises/{enterprise_id}/recordings/aud_pya_expired")
        with self.assertRaises(EarshotError) as gone:
            self.client.download_audio("aud_pya_expired", os.path.join(self.directory, "gone.wav"))
        self.assertEqual(gone.exception.code, 4040)
        self.assertEqual(sorted(os.listdir(self.directory)), ["fresh.wav"])


def status_of(link: str) -> int:
    try:
        with direct_opener.open(link, timeout=10) as answer:
            answer.read()
            return answer.status
    except urllib.error.HTTPError as refusal:
        refusal.close()
        return refusal.code
