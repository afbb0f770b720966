"""A download's part file: the bytes had so far beside the ETag they belong to (so a later call
resumes), hashed as they are appended, made durable, verified and renamed into place at the end."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Optional

from .errors import EarshotDigestMismatchError

_READ_SIZE = 1024 * 1024


@dataclass(frozen=True)
class DownloadedAudio:
    """What ``Client.download_audio`` wrote."""

    #: The file's size.
    bytes: int
    #: The file's SHA-256, lower-case hex.
    sha256: str
    #: The link's Content-Type, without parameters.
    content_type: str
    #: How many times the download went on from bytes already had (a 206), an earlier call's included.
    resumed: int
    #: The SHA-256 was checked against the link's Repr-Digest; False for a link that states none.
    verified: bool


class PartFile:
    """``path + '.part'``, open for appending, and ``path + '.part.etag'`` beside it.

    Opened, it takes up what an earlier call left when an ETag was kept for it, and starts empty
    otherwise. ``have`` bytes are in the file and ``hash`` is their SHA-256 so far.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.part_path = path + ".part"
        self.etag_path = self.part_path + ".etag"
        self.etag: Optional[str] = None
        self.have = 0
        self.hash = hashlib.sha256()
        self._file = open(self.part_path, "ab")
        try:
            self._take_up()
        except BaseException:
            self._file.close()
            raise

    def _take_up(self) -> None:
        try:
            with open(self.etag_path, encoding="utf-8") as kept:
                etag = kept.read().strip()
        except FileNotFoundError:
            etag = ""
        size = os.fstat(self._file.fileno()).st_size
        if not etag or size == 0:
            self.restart()
            return
        self.etag, self.have = etag, size
        with open(self.part_path, "rb") as had:
            for chunk in iter(lambda: had.read(_READ_SIZE), b""):
                self.hash.update(chunk)

    def restart(self) -> None:
        """Forgets the bytes had: the next request asks for the whole file."""
        self.have = 0
        self.hash = hashlib.sha256()
        self.etag = None
        self._file.truncate(0)
        _remove(self.etag_path)

    def keep_etag(self, etag: str) -> None:
        """The validator of the bytes appended from now on, kept for a later call to resume with."""
        self.etag = etag
        with open(self.etag_path, "w", encoding="utf-8") as kept:
            kept.write(etag)

    def append(self, chunk: bytes) -> None:
        self._file.write(chunk)
        self.hash.update(chunk)
        self.have += len(chunk)

    def close(self) -> None:
        self._file.close()

    def finish(self, expected: Optional[bytes]) -> str:
        """Synced to disk, checked against ``expected`` (a SHA-256) and renamed to ``path``; its hex SHA-256.

        On a mismatch the part file is removed and EarshotDigestMismatchError raised.
        """
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
        finally:
            self._file.close()
        actual = self.hash.digest()
        if expected is not None and actual != expected:
            remove_partial(self.path)
            raise EarshotDigestMismatchError(expected.hex(), actual.hex())
        os.replace(self.part_path, self.path)
        _remove(self.etag_path)
        _sync_directory(os.path.dirname(os.path.abspath(self.path)))
        return actual.hex()


def remove_partial(path: str) -> None:
    """Removes what a download to ``path`` left: its part file and the ETag beside it."""
    _remove(path + ".part")
    _remove(path + ".part.etag")


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _sync_directory(directory: str) -> None:
    """Makes the rename durable; only POSIX systems can open a directory to sync it."""
    if os.name != "posix":
        return
    handle = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
