"""The envelope against the repository's test vectors (packages/protocol/test-data/envelope.json),
used exactly as packages/protocol/src/vectors.test.ts uses them, and seal/open round trips."""

from __future__ import annotations

import base64
import json

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from earshot_partner.envelope import (
    MAX_KEY_VERSION,
    SECRET_RULE,
    load_key,
    open_envelope,
    seal,
)
from earshot_partner.errors import EnvelopeError, InvalidSecretError

from .support import VECTORS, TimedTestCase

with open(VECTORS, encoding="utf-8") as file:
    vectors = json.load(file)

EXAMPLE_SECRET = "wv+7DCv0af3nC9Fme+s3OZBWDJc16kPLzKja6ht0Vq0="


class VectorsTest(TimedTestCase):
    def test_the_file_holds_vectors_of_every_kind(self) -> None:
        self.assertTrue(vectors["valid"] and vectors["invalid"])
        self.assertTrue(vectors["secrets"]["valid"] and vectors["secrets"]["invalid"])

    def test_every_valid_vector_opens_to_exactly_its_plaintext(self) -> None:
        for vector in vectors["valid"]:
            with self.subTest(vector["name"]):
                opened = open_envelope(vector["envelope"], load_key(vector["secret"]))
                expected = json.loads(vector["plaintext"])
                self.assertEqual(opened.plaintext, expected)
                self.assertEqual(json.dumps(opened.plaintext), json.dumps(expected))
                self.assertEqual(opened.envelope["eventId"], vector["envelope"]["eventId"])

    def test_every_invalid_vector_is_refused_with_its_failure(self) -> None:
        codes = {"invalid_envelope": 4000, "decryption_failed": 4012, "invalid_plaintext": 4000}
        for vector in vectors["invalid"]:
            with self.subTest(vector["name"]):
                with self.assertRaises(EnvelopeError) as refused:
                    open_envelope(vector["envelope"], load_key(vector["secret"]))
                self.assertEqual(refused.exception.kind, vector["error"])
                self.assertEqual(refused.exception.code, codes[vector["error"]])

    def test_the_key_loader_accepts_and_refuses_the_secrets_it_should(self) -> None:
        for secret in vectors["secrets"]["valid"]:
            with self.subTest(secret):
                self.assertEqual(len(load_key(secret)), 32)
        for secret in vectors["secrets"]["invalid"]:
            with self.subTest(secret):
                with self.assertRaises(InvalidSecretError) as refused:
                    load_key(secret)
                self.assertIn(SECRET_RULE, str(refused.exception))


class SealTest(TimedTestCase):
    def test_the_protocols_worked_example_opens(self) -> None:
        example = {
            "specVersion": "1", "alg": "A256GCM", "keyVersion": 1, "eventId": "evt-callback",
            "nonce": "rYIKUYEsTlLXZV4W", "ciphertext": "FO42eE+WTfpMAyiLOnQ8Dl7o57M=",
            "tag": "OhFYmM9RCByo8EOU+rLg2g==",
        }
        self.assertEqual(open_envelope(example, load_key(EXAMPLE_SECRET)).plaintext, {"audioId": "aud_01"})

    def test_seal_then_open_gives_the_plaintext_back_under_a_fresh_nonce_each_time(self) -> None:
        key = load_key(EXAMPLE_SECRET)
        plaintext = {"title": "Réunion 会议 🎙", "n": 3, "nested": {"list": [1, None, True]}}
        first, second = seal(key, 7, "evt-1", plaintext), seal(key, 7, "evt-1", plaintext)
        self.assertNotEqual(first["nonce"], second["nonce"])
        self.assertEqual(len(first["tag"]), 24)
        self.assertEqual(len(first["nonce"]), 16)
        opened = open_envelope(first, {7: key})
        self.assertEqual(opened.plaintext, plaintext)
        self.assertEqual(opened.envelope["keyVersion"], 7)

    def test_unknown_extra_fields_of_the_envelope_are_ignored(self) -> None:
        key = load_key(EXAMPLE_SECRET)
        envelope = {**seal(key, 1, "evt", {}), "enterpriseId": 42, "extra": [1]}
        self.assertEqual(open_envelope(envelope, key).envelope.keys() & {"enterpriseId", "extra"}, set())

    def test_an_unknown_key_version_and_one_past_the_largest_fail_to_decrypt(self) -> None:
        key = load_key(EXAMPLE_SECRET)
        envelope = seal(key, 2, "evt", {})
        with self.assertRaises(EnvelopeError) as unknown:
            open_envelope(envelope, {1: key})
        self.assertEqual(unknown.exception.kind, "decryption_failed")
        with self.assertRaises(EnvelopeError) as too_large:
            open_envelope({**envelope, "keyVersion": MAX_KEY_VERSION + 1}, lambda version: key)
        self.assertEqual(too_large.exception.kind, "decryption_failed")

    def test_malformed_fields_python_would_let_through_are_refused(self) -> None:
        key = load_key(EXAMPLE_SECRET)
        envelope = seal(key, 1, "evt", {})
        for name, value in (("keyVersion", True), ("keyVersion", 1.5), ("keyVersion", 0),
                            ("eventId", "x" * 129), ("specVersion", 1), ("nonce", envelope["nonce"] + "\n")):
            with self.subTest(name=name, value=value):
                with self.assertRaises(EnvelopeError) as refused:
                    open_envelope({**envelope, name: value}, key)
                self.assertEqual(refused.exception.kind, "invalid_envelope")
        self.assertEqual(open_envelope({**envelope, "keyVersion": 1.0}, key).envelope["keyVersion"], 1)

    def test_a_plaintext_with_a_byte_order_mark_or_nan_is_not_a_json_object(self) -> None:
        key = load_key(EXAMPLE_SECRET)
        for text in ('\ufeff{"a":1}', '{"a":NaN}'):
            with self.subTest(text=text):
                sealed = AESGCM(key).encrypt(b"\x00" * 12, text.encode("utf-8"), None)
                envelope = {**seal(key, 1, "evt", {}), "nonce": "AAAAAAAAAAAAAAAA"}
                envelope["ciphertext"] = base64.b64encode(sealed[:-16]).decode()
                envelope["tag"] = base64.b64encode(sealed[-16:]).decode()
                with self.assertRaises(EnvelopeError) as refused:
                    open_envelope(envelope, key)
                self.assertEqual(refused.exception.kind, "invalid_plaintext")
