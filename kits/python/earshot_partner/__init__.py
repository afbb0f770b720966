"""The Earshot partner kit for Python: a client of the partner API (audio downloads and the partner's
own endpoints, deliveries, levels and key included), envelopes, and a push receiver with a durable
receipt-callback outbox (sqlite3). See README.md."""

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
from .self_service_answers import (
    Delivery,
    DeliveryPage,
    Endpoint,
    EndpointList,
    Levels,
    PortalLink,
    ReceiverCheckReport,
    RemovedEndpoint,
    Replayed,
    RotatedKey,
)

__version__ = "0.1.0"

__all__ = [
    "Client",
    "DecryptionFailedError",
    "Delivery",
    "DeliveryPage",
    "DownloadedAudio",
    "EarshotDigestMismatchError",
    "EarshotError",
    "EarshotNetworkError",
    "EarshotNoAudioError",
    "EarshotResponseError",
    "Endpoint",
    "EndpointList",
    "EnvelopeError",
    "InvalidEnvelopeError",
    "InvalidPlaintextError",
    "InvalidSecretError",
    "Levels",
    "Outbox",
    "PortalLink",
    "PushAnswer",
    "PushEvent",
    "Receiver",
    "ReceiverCheckReport",
    "RemovedEndpoint",
    "Replayed",
    "RotatedKey",
    "asgi_app",
    "load_key",
    "open_envelope",
    "seal",
    "wsgi_app",
]
