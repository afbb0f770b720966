"""The platform's answer codes (docs/protocol.md, "Answer codes") and the kit's exceptions."""

from __future__ import annotations

from typing import Optional

#: Every code of the catalogue, by number: (name, what to check).
CATALOGUE: dict[int, tuple[str, str]] = {
    2000: ("OK", "success"),
    4000: ("INVALID_REQUEST", "the request is not a valid envelope"),
    4001: ("INVALID_PARAMETER", "a request field is invalid"),
    4010: ("UNAUTHORIZED", "missing or invalid bearer token"),
    4011: ("TOKEN_EXPIRED", "the access token has expired"),
    4012: ("DECRYPTION_FAILED", "the envelope could not be decrypted"),
    4030: ("FORBIDDEN", "the enterprise is disabled"),
    4031: ("FORBIDDEN_BY_ROLE", "the caller's role does not grant this"),
    4040: ("NOT_FOUND", "no such recording"),
    4080: ("REQUEST_TIMEOUT", "the request did not arrive within the server's time limit"),
    4090: ("REPLAYED", "this envelope nonce was already used"),
    4130: ("PAYLOAD_TOO_LARGE", "the request body is over the size limit"),
    4140: ("URI_TOO_LONG", "a part of the request path is over 1024 characters"),
    4150: ("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json"),
    4290: ("RATE_LIMITED", "rate limit exceeded; retry after the time in Retry-After"),
    5000: ("INTERNAL_ERROR", "internal error"),
    5030: ("UNAVAILABLE", "the service is unavailable; retry later"),
}

OK = 2000
INVALID_REQUEST = 4000
INVALID_PARAMETER = 4001
UNAUTHORIZED = 4010
TOKEN_EXPIRED = 4011
DECRYPTION_FAILED = 4012
FORBIDDEN = 4030
FORBIDDEN_BY_ROLE = 4031  # the admin API's; never answered to a partner
NOT_FOUND = 4040
REQUEST_TIMEOUT = 4080
REPLAYED = 4090
PAYLOAD_TOO_LARGE = 4130
URI_TOO_LONG = 4140
UNSUPPORTED_MEDIA_TYPE = 4150
RATE_LIMITED = 4290
INTERNAL_ERROR = 5000
UNAVAILABLE = 5030


def http_status_of(code: int) -> int:
    """The HTTP status of a code: the code divided by 10, rounded down."""
    return code // 10


def default_message(code: int) -> str:
    entry = CATALOGUE.get(code)
    return entry[1] if entry else f"code {code}"


class EarshotError(Exception):
    """A refusal in the catalogue's terms.

    ``code`` is the catalogue's number (4001, 4040, ...) when the platform answered one, or the code
    the kit itself refuses with (an invalid filter is 4001 before anything is sent). It is ``None``
    only for the subclasses that have no answer to report: EarshotNetworkError, EarshotResponseError.
    """

    def __init__(
        self,
        code: Optional[int],
        msg: str,
        *,
        request_id: Optional[str] = None,
        http_status: Optional[int] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(f"error {code}: {msg}" if code is not None else msg)
        self.code = code
        self.msg = msg
        self.request_id = request_id
        self.http_status = http_status
        #: Seconds of the Retry-After header (4290, 5030), when sent.
        self.retry_after = retry_after

    @property
    def name(self) -> Optional[str]:
        """The catalogue's name of the code (``NOT_FOUND``), or None for a code it does not have."""
        entry = CATALOGUE.get(self.code) if self.code is not None else None
        return entry[0] if entry else None


class EarshotNetworkError(EarshotError):
    """The platform could not be reached, or the connection failed before a whole answer came."""

    def __init__(self, msg: str) -> None:
        super().__init__(None, msg)


class EarshotResponseError(EarshotError):
    """What answered is not the Earshot API: no catalogue JSON body, or data that does not open."""

    def __init__(self, msg: str, http_status: Optional[int] = None) -> None:
        super().__init__(None, msg, http_status=http_status)


class EarshotNoAudioError(EarshotError):
    """The recording has no audio part (no ``denoiseUrl``): there is nothing to download."""

    def __init__(self, audio_id: str) -> None:
        super().__init__(None, f"recording {audio_id} has no audio part (no denoiseUrl)")
        self.audio_id = audio_id


class EarshotDigestMismatchError(EarshotError):
    """The downloaded audio is not the file its link stated (``Repr-Digest``): the partial file was
    removed. ``expected`` and ``actual`` are SHA-256s in lower-case hex."""

    def __init__(self, expected: str, actual: str) -> None:
        super().__init__(None, f"the downloaded audio's SHA-256 is {actual}, but the link stated {expected}")
        self.expected = expected
        self.actual = actual


class EnvelopeError(EarshotError):
    """An envelope that does not open. ``kind`` is the test vectors' name of the failure."""

    kind = "envelope_error"


class InvalidEnvelopeError(EnvelopeError):
    """Malformed: a field missing or of the wrong type, a fixed value wrong, Base64 not canonical."""

    kind = "invalid_envelope"

    def __init__(self, msg: str) -> None:
        super().__init__(INVALID_REQUEST, msg)


class DecryptionFailedError(EnvelopeError):
    """Wrong key, unknown keyVersion, tampered bytes: one error for all, so nothing is learnt."""

    kind = "decryption_failed"

    def __init__(self) -> None:
        super().__init__(DECRYPTION_FAILED, "the envelope could not be decrypted")


class InvalidPlaintextError(EnvelopeError):
    """Authentic, but the plaintext is not UTF-8 JSON holding an object."""

    kind = "invalid_plaintext"

    def __init__(self, msg: str) -> None:
        super().__init__(INVALID_REQUEST, msg)


class InvalidSecretError(ValueError):
    """A secret that is neither 44 characters of canonical Base64 of 32 bytes nor 32 UTF-8 bytes."""
