"""Sealing and opening envelopes: AES-256-GCM, exactly as docs/protocol.md ("The envelope") says."""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Union

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .errors import (
    DecryptionFailedError,
    InvalidEnvelopeError,
    InvalidPlaintextError,
    InvalidSecretError,
)

SPEC_VERSION = "1"
ALG = "A256GCM"
NONCE_BYTES = 12
TAG_BYTES = 16
KEY_BYTES = 32
MAX_EVENT_ID_LENGTH = 128
#: A larger keyVersion is well-formed but can never be a key: it fails as decryption_failed.
MAX_KEY_VERSION = 2**31 - 1

SECRET_RULE = (
    "a secret must be 44 characters of standard Base64 (with padding) decoding to 32 bytes, "
    "or a string of exactly 32 bytes in UTF-8"
)

#: A key, or keys by keyVersion, or a function finding the key of a keyVersion (None: unknown).
Keys = Union[bytes, Mapping[int, bytes], Callable[[int], Optional[bytes]]]


@dataclass(frozen=True)
class Opened:
    """An opened envelope: its own fields (extra ones dropped) and the decrypted JSON object."""

    envelope: dict
    plaintext: dict


def load_key(secret: str) -> bytes:
    """The AES-256 key of a secret: 44 characters of canonical Base64 of 32 bytes, or 32 UTF-8 bytes."""
    if not isinstance(secret, str):
        raise InvalidSecretError(f"{SECRET_RULE}; got {type(secret).__name__}")
    if len(secret) == 44:
        decoded = decode_canonical_base64(secret)
        if decoded is not None and len(decoded) == KEY_BYTES:
            return decoded
        raw_length = len(secret.encode("utf-8"))
    else:
        raw = secret.encode("utf-8", "surrogatepass")
        if len(raw) == KEY_BYTES:
            return raw
        raw_length = len(raw)
    raise InvalidSecretError(f"{SECRET_RULE}; got {raw_length} bytes")


def decode_canonical_base64(text: str) -> Optional[bytes]:
    """Decodes standard Base64 with padding, no whitespace, zero unused bits; None for anything else."""
    try:
        data = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return None
    # The round trip catches what validate= lets through (non-zero unused bits).
    return data if base64.b64encode(data).decode("ascii") == text else None


def encode_base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def seal(key: bytes, key_version: int, event_id: str, plaintext: Mapping[str, Any]) -> dict:
    """Encrypts a JSON object into an envelope under a fresh random 12-byte nonce."""
    if not is_json_integer(key_version) or not 1 <= key_version <= MAX_KEY_VERSION:
        raise InvalidEnvelopeError(f"keyVersion must be an integer from 1 to {MAX_KEY_VERSION}")
    _check_event_id(event_id)
    if not isinstance(plaintext, Mapping):
        raise InvalidPlaintextError("the plaintext must be a JSON object")
    if len(key) != KEY_BYTES:
        raise ValueError("the key must be 32 bytes: load it with load_key()")
    nonce = os.urandom(NONCE_BYTES)
    text = json.dumps(dict(plaintext), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    sealed = AESGCM(key).encrypt(nonce, text.encode("utf-8"), None)
    return {
        "specVersion": SPEC_VERSION,
        "alg": ALG,
        "keyVersion": int(key_version),
        "eventId": event_id,
        "nonce": encode_base64(nonce),
        "ciphertext": encode_base64(sealed[:-TAG_BYTES]),
        "tag": encode_base64(sealed[-TAG_BYTES:]),
    }


def open_envelope(envelope: Any, keys: Keys) -> Opened:
    """Checks and decrypts an envelope (a parsed JSON value).

    Raises InvalidEnvelopeError for a malformed envelope (checked before anything is decrypted),
    DecryptionFailedError when no key is known for its keyVersion or authentication fails, and
    InvalidPlaintextError when the authentic plaintext is not UTF-8 JSON holding an object.
    """
    fields, nonce, tag, ciphertext = _check_envelope(envelope)
    key = _key_for(keys, fields["keyVersion"])
    if key is None:
        raise DecryptionFailedError()
    try:
        data = AESGCM(key).decrypt(nonce, ciphertext + tag, None)
    except (InvalidTag, ValueError):
        raise DecryptionFailedError() from None
    return Opened(envelope=fields, plaintext=parse_plaintext(data))


def parse_plaintext(data: bytes) -> dict:
    """UTF-8 JSON holding an object; invalid UTF-8 and a byte-order mark are refused."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidPlaintextError("the plaintext is not valid UTF-8") from None
    value = parse_json(text)
    if value is _NOT_JSON:
        raise InvalidPlaintextError("the plaintext is not JSON")
    if not isinstance(value, dict):
        raise InvalidPlaintextError("the plaintext must be a JSON object")
    return value


_NOT_JSON = object()


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str) -> Any:
    """Strict JSON (no NaN or Infinity, no BOM); the sentinel _NOT_JSON when it is not."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return _NOT_JSON


def is_json_failure(value: Any) -> bool:
    return value is _NOT_JSON


def _check_envelope(value: Any) -> tuple[dict, bytes, bytes, bytes]:
    if not isinstance(value, dict):
        raise InvalidEnvelopeError("the envelope must be a JSON object")
    if value.get("specVersion") != SPEC_VERSION:
        raise InvalidEnvelopeError('specVersion must be the string "1"')
    if value.get("alg") != ALG:
        raise InvalidEnvelopeError('alg must be the string "A256GCM"')
    key_version = value.get("keyVersion")
    if not is_json_integer(key_version) or key_version < 1:
        raise InvalidEnvelopeError("keyVersion must be a positive integer")
    event_id = value.get("eventId")
    _check_event_id(event_id)
    texts = {name: _require_string(value.get(name), name) for name in ("nonce", "ciphertext", "tag")}
    nonce = _decode_field(texts["nonce"], "nonce", NONCE_BYTES)
    tag = _decode_field(texts["tag"], "tag", TAG_BYTES)
    ciphertext = _decode_field(texts["ciphertext"], "ciphertext")
    # Only now: a malformed envelope is invalid_envelope whatever its keyVersion.
    if key_version > MAX_KEY_VERSION:
        raise DecryptionFailedError()
    fields = {
        "specVersion": SPEC_VERSION,
        "alg": ALG,
        "keyVersion": int(key_version),
        "eventId": event_id,
        **texts,
    }
    return fields, nonce, tag, ciphertext


def is_json_integer(value: Any) -> bool:
    """An integer as JSON has it: 3 and 3.0 are, True is not (bool is an int in Python)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


def _check_event_id(event_id: Any) -> None:
    if not isinstance(event_id, str) or not 1 <= len(event_id) <= MAX_EVENT_ID_LENGTH:
        raise InvalidEnvelopeError(
            f"eventId must be a non-empty string of at most {MAX_EVENT_ID_LENGTH} characters"
        )


def _require_string(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise InvalidEnvelopeError(f"{field} must be a Base64 string")
    return value


def _decode_field(text: str, field: str, expected_bytes: Optional[int] = None) -> bytes:
    data = decode_canonical_base64(text)
    if data is None:
        raise InvalidEnvelopeError(
            f"{field} must be canonical standard Base64 (padding required, no whitespace)"
        )
    if expected_bytes is not None and len(data) != expected_bytes:
        raise InvalidEnvelopeError(f"{field} must decode to exactly {expected_bytes} bytes")
    return data


def _key_for(keys: Keys, key_version: int) -> Optional[bytes]:
    if isinstance(keys, (bytes, bytearray)):
        return bytes(keys)
    if isinstance(keys, Mapping):
        return keys.get(key_version)
    return keys(key_version)
