package earshot

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The envelope's fixed values and sizes (docs/protocol.md, "The envelope").
const (
	SpecVersion = "1"
	Alg         = "A256GCM"
	NonceBytes  = 12
	TagBytes    = 16
	KeyBytes    = 32
	// MaxKeyVersion is the largest keyVersion a key can have; a larger one is well-formed but
	// refused as ErrDecryptionFailed, like any unknown keyVersion.
	MaxKeyVersion = 1<<31 - 1
	// MaxEventIDLength is the most characters (code points) an eventId may have.
	MaxEventIDLength = 128
)

// SecretRule is the rule a secret must follow, quoted when one is refused.
const SecretRule = "a secret must be 44 characters of standard Base64 (with padding) decoding to 32 bytes, " +
	"or a string of exactly 32 bytes in UTF-8"

// Envelope is the encrypted form every request, sealed answer and push travels in.
type Envelope struct {
	SpecVersion string `json:"specVersion"`
	Alg         string `json:"alg"`
	KeyVersion  int    `json:"keyVersion"`
	EventID     string `json:"eventId"`
	Nonce       string `json:"nonce"`
	Ciphertext  string `json:"ciphertext"`
	Tag         string `json:"tag"`
}

// Key is an AES-256-GCM key loaded from a secret.
type Key struct {
	aead cipher.AEAD
}

// LoadKey loads a secret in one of its two forms: 44 characters of canonical standard Base64 that
// decode to 32 bytes, or a string of exactly 32 bytes in UTF-8 used as the key as it is.
func LoadKey(secret string) (*Key, error) {
	var raw []byte
	if utf16Length(secret) == 44 {
		if decoded, ok := decodeCanonical(secret); ok && len(decoded) == KeyBytes {
			raw = decoded
		}
	} else if len(secret) == KeyBytes {
		raw = []byte(secret)
	}
	if raw == nil {
		return nil, fmt.Errorf("%w: %s; got %d bytes", ErrInvalidSecret, SecretRule, len(secret))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCMWithTagSize(block, TagBytes)
	if err != nil {
		return nil, err
	}
	return &Key{aead: aead}, nil
}

// utf16Length counts a string as JavaScript does, so that the two forms are told apart as the
// platform tells them apart.
func utf16Length(s string) int {
	n := 0
	for _, r := range s {
		n += len(utf16.Encode([]rune{r}))
	}
	return n
}

// Seal encrypts plaintext, which must marshal to a JSON object, under a fresh random nonce.
func (k *Key) Seal(keyVersion int, eventID string, plaintext interface{}) (*Envelope, error) {
	if keyVersion < 1 || keyVersion > MaxKeyVersion {
		return nil, fmt.Errorf("%w: keyVersion must be an integer from 1 to %d", ErrInvalidEnvelope, MaxKeyVersion)
	}
	if err := checkEventID(eventID); err != nil {
		return nil, err
	}
	text, err := json.Marshal(plaintext)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPlaintext, err)
	}
	if !isJSONObject(text) {
		return nil, fmt.Errorf("%w: the plaintext must be a JSON object", ErrInvalidPlaintext)
	}
	nonce := make([]byte, NonceBytes)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	sealed := k.aead.Seal(nil, nonce, text, nil)
	cut := len(sealed) - TagBytes
	return &Envelope{
		SpecVersion: SpecVersion,
		Alg:         Alg,
		KeyVersion:  keyVersion,
		EventID:     eventID,
		Nonce:       base64.StdEncoding.EncodeToString(nonce),
		Ciphertext:  base64.StdEncoding.EncodeToString(sealed[:cut]),
		Tag:         base64.StdEncoding.EncodeToString(sealed[cut:]),
	}, nil
}

// Open checks and decrypts an envelope with this key, whatever its keyVersion.
func (k *Key) Open(body []byte) (*Envelope, []byte, error) {
	return OpenEnvelope(body, func(int) *Key { return k })
}

// OpenEnvelope checks an envelope (every field, canonical Base64, nonce and tag lengths: all before
// anything is decrypted), decrypts it with the key keyFor returns for its keyVersion (nil: none is
// known), and returns it with its plaintext, a UTF-8 JSON object. Unknown extra fields are ignored.
// Errors wrap ErrInvalidEnvelope, ErrDecryptionFailed or ErrInvalidPlaintext.
func OpenEnvelope(body []byte, keyFor func(keyVersion int) *Key) (*Envelope, []byte, error) {
	env, nonce, sealed, err := checkEnvelope(body)
	if err != nil {
		return nil, nil, err
	}
	key := keyFor(env.KeyVersion)
	if key == nil {
		return nil, nil, ErrDecryptionFailed
	}
	plaintext, err := key.aead.Open(nil, nonce, sealed, nil)
	if err != nil {
		return nil, nil, ErrDecryptionFailed
	}
	if !utf8.Valid(plaintext) {
		return nil, nil, fmt.Errorf("%w: the plaintext is not valid UTF-8", ErrInvalidPlaintext)
	}
	if !json.Valid(plaintext) {
		return nil, nil, fmt.Errorf("%w: the plaintext is not JSON", ErrInvalidPlaintext)
	}
	if !isJSONObject(plaintext) {
		return nil, nil, fmt.Errorf("%w: the plaintext must be a JSON object", ErrInvalidPlaintext)
	}
	return env, plaintext, nil
}

// checkEnvelope returns the envelope, its nonce and its ciphertext with the tag appended.
func checkEnvelope(body []byte) (*Envelope, []byte, []byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return nil, nil, nil, fmt.Errorf("%w: the envelope must be a JSON object", ErrInvalidEnvelope)
	}
	env := &Envelope{}
	if s, ok := jsonString(fields["specVersion"]); !ok || s != SpecVersion {
		return nil, nil, nil, fmt.Errorf(`%w: specVersion must be the string "1"`, ErrInvalidEnvelope)
	}
	if s, ok := jsonString(fields["alg"]); !ok || s != Alg {
		return nil, nil, nil, fmt.Errorf(`%w: alg must be the string "A256GCM"`, ErrInvalidEnvelope)
	}
	keyVersion, ok := jsonPositiveInteger(fields["keyVersion"])
	if !ok {
		return nil, nil, nil, fmt.Errorf("%w: keyVersion must be a positive integer", ErrInvalidEnvelope)
	}
	env.SpecVersion, env.Alg = SpecVersion, Alg
	if env.EventID, ok = jsonString(fields["eventId"]); !ok {
		return nil, nil, nil, fmt.Errorf("%w: eventId must be a string", ErrInvalidEnvelope)
	}
	if err := checkEventID(env.EventID); err != nil {
		return nil, nil, nil, err
	}
	nonce, err := base64Field(fields, "nonce", &env.Nonce, NonceBytes)
	if err != nil {
		return nil, nil, nil, err
	}
	tag, err := base64Field(fields, "tag", &env.Tag, TagBytes)
	if err != nil {
		return nil, nil, nil, err
	}
	ciphertext, err := base64Field(fields, "ciphertext", &env.Ciphertext, -1)
	if err != nil {
		return nil, nil, nil, err
	}
	// Only once the envelope is known to be well-formed: a malformed one is invalid whatever its
	// keyVersion.
	if keyVersion > MaxKeyVersion {
		return nil, nil, nil, ErrDecryptionFailed
	}
	env.KeyVersion = int(keyVersion)
	return env, nonce, append(ciphertext, tag...), nil
}

func checkEventID(eventID string) error {
	if eventID == "" || utf8.RuneCountInString(eventID) > MaxEventIDLength {
		return fmt.Errorf("%w: eventId must be a non-empty string of at most %d characters",
			ErrInvalidEnvelope, MaxEventIDLength)
	}
	return nil
}

func base64Field(fields map[string]json.RawMessage, name string, text *string, size int) ([]byte, error) {
	s, ok := jsonString(fields[name])
	if !ok {
		return nil, fmt.Errorf("%w: %s must be a Base64 string", ErrInvalidEnvelope, name)
	}
	decoded, ok := decodeCanonical(s)
	if !ok {
		return nil, fmt.Errorf("%w: %s must be canonical standard Base64 (padding required, no whitespace)",
			ErrInvalidEnvelope, name)
	}
	if size >= 0 && len(decoded) != size {
		return nil, fmt.Errorf("%w: %s must decode to exactly %d bytes", ErrInvalidEnvelope, name, size)
	}
	*text = s
	return decoded, nil
}

// decodeCanonical decodes standard Base64 only when encoding the bytes again gives the same text:
// the decoder alone skips line breaks and accepts non-zero unused bits.
func decodeCanonical(text string) ([]byte, bool) {
	decoded, err := base64.StdEncoding.DecodeString(text)
	if err != nil || base64.StdEncoding.EncodeToString(decoded) != text {
		return nil, false
	}
	return decoded, true
}

// jsonString is the value of a JSON string; false for anything else, absent included.
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// jsonPositiveInteger reads a JSON number holding an integer ≥ 1 (1.0 and 1e3 are integers, as
// JavaScript reads them); the value may be beyond MaxKeyVersion.
func jsonPositiveInteger(raw json.RawMessage) (float64, bool) {
	if len(raw) == 0 || !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(f, 0) || f != math.Trunc(f) || f < 1 {
		return 0, false
	}
	return f, true
}

func isJSONObject(text []byte) bool {
	trimmed := bytes.TrimLeft(text, " \t\r\n")
	return len(trimmed) > 0 && trimmed[0] == '{'
}
