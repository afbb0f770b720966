"""The Earshot partner kit for Python: a client of the partner API (audio downloads included),
envelopes, and a push receiver with a durable receipt-callback outbox (sqlite3). See README.md."""

from .adapters import asgi_app, wsgi_app
from .client import Client
from .envelope import load_key, open_envelope, seal
from .errors import (
    DecryptionFailedError,
    EarshotDigestMismatchError,
    EarshotError,
    EarshotNetworkError,
    EarshotNoAudioError,
    EarshotResponseError,
    EnvelopeError,
    InvalidEnvelopeError,
    InvalidPlaintextError,
    InvalidSecretError,
)
from .messages import PushEvent
from .outbox import Outbox
from .partial_file import DownloadedAudio
from .receiver import PushAnswer, Receiver

__version__ = "0.1.0"

__all__ = [
    "Client",
    "DecryptionFailedError",
    "DownloadedAudio",
    "EarshotDigestMismatchError",
    "EarshotError",
    "EarshotNetworkError",
    "EarshotNoAudioError",
    "EarshotResponseError",
    "EnvelopeError",
    "InvalidEnvelopeError",
    "InvalidPlaintextError",
    "InvalidSecretError",
    "Outbox",
    "PushAnswer",
    "PushEvent",
    "Receiver",
    "asgi_app",
    "load_key",
    "open_envelope",
    "seal",
    "wsgi_app",
]
