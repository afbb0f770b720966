"""The Earshot partner kit for Python. See README.md."""

from .client import Client
from .envelope import load_key, open_envelope, seal
from .errors import (
    DecryptionFailedError,
    EarshotError,
    EarshotNetworkError,
    EarshotResponseError,
    EnvelopeError,
    InvalidEnvelopeError,
    InvalidPlaintextError,
    InvalidSecretError,
)

__version__ = "0.1.0"
