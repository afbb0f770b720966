package earshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"testing"
)

// The repository's envelope vectors, as the Node kit's vectors.test.ts reads them.
const vectorsPath = "../../packages/protocol/test-data/envelope.json"

type vector struct {
	Name      string          `json:"name"`
	Secret    string          `json:"secret"`
	Envelope  json.RawMessage `json:"envelope"`
	Plaintext string          `json:"plaintext"`
	Error     string          `json:"error"`
}

type vectorFile struct {
	Valid   []vector `json:"valid"`
	Invalid []vector `json:"invalid"`
	Secrets struct {
		Valid   []string `json:"valid"`
		Invalid []string `json:"invalid"`
	} `json:"secrets"`
}

func readVectors(t *testing.T) vectorFile {
	t.Helper()
	text, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	var file vectorFile
	if err := json.Unmarshal(text, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Valid) == 0 || len(file.Invalid) == 0 || len(file.Secrets.Valid) == 0 || len(file.Secrets.Invalid) == 0 {
		t.Fatal("the vector file lacks vectors of some kind")
	}
	return file
}

var vectorErrors = map[string]error{
	"invalid_envelope":  ErrInvalidEnvelope,
	"decryption_failed": ErrDecryptionFailed,
	"invalid_plaintext": ErrInvalidPlaintext,
}

func TestVectorsValidOpenToTheirPlaintext(t *testing.T) {
	for _, v := range readVectors(t).Valid {
		v := v
		t.Run(v.Name, func(t *testing.T) {
			key, err := LoadKey(v.Secret)
			if err != nil {
				t.Fatal(err)
			}
			env, plaintext, err := key.Open(v.Envelope)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(plaintext, []byte(v.Plaintext)) {
				t.Fatalf("plaintext %s, want %s", plaintext, v.Plaintext)
			}
			var want Envelope
			_ = json.Unmarshal(v.Envelope, &want)
			if *env != want {
				t.Fatalf("envelope %+v, want %+v", *env, want)
			}
		})
	}
}

func TestVectorsInvalidAreRefusedAsNamed(t *testing.T) {
	for _, v := range readVectors(t).Invalid {
		v := v
		t.Run(v.Name, func(t *testing.T) {
			want, known := vectorErrors[v.Error]
			if !known {
				t.Fatalf("unknown error class %q", v.Error)
			}
			key, err := LoadKey(v.Secret)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = key.Open(v.Envelope)
			if !errors.Is(err, want) {
				t.Fatalf("got %v, want %v", err, want)
			}
			for other, otherErr := range vectorErrors {
				if other != v.Error && errors.Is(err, otherErr) {
					t.Fatalf("%v is also %s", err, other)
				}
			}
		})
	}
}

func TestVectorsSecrets(t *testing.T) {
	file := readVectors(t)
	for _, secret := range file.Secrets.Valid {
		if _, err := LoadKey(secret); err != nil {
			t.Errorf("secret %q refused: %v", secret, err)
		}
	}
	for _, secret := range file.Secrets.Invalid {
		if _, err := LoadKey(secret); !errors.Is(err, ErrInvalidSecret) {
			t.Errorf("secret %q: got %v, want ErrInvalidSecret", secret, err)
		}
	}
}

func TestSealOpensWithItsKeyOnly(t *testing.T) {
	key, _ := LoadKey("wv+7DCv0af3nC9Fme+s3OZBWDJc16kPLzKja6ht0Vq0=")
	other, _ := LoadKey("0123456789abcdefghijklmnopqrstuv")
	env, err := key.Seal(7, "evt-1", map[string]interface{}{"audioId": "aud_01", "n": 1})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(env)
	opened, plaintext, err := OpenEnvelope(body, func(v int) *Key {
		if v == 7 {
			return key
		}
		return nil
	})
	if err != nil || opened.KeyVersion != 7 || string(plaintext) != `{"audioId":"aud_01","n":1}` {
		t.Fatalf("opened %+v %s %v", opened, plaintext, err)
	}
	if _, _, err := other.Open(body); !errors.Is(err, ErrDecryptionFailed) {
		t.Fatalf("another key: %v", err)
	}
	again, _ := key.Seal(7, "evt-1", map[string]interface{}{"audioId": "aud_01", "n": 1})
	if again.Nonce == env.Nonce {
		t.Fatal("a nonce was reused")
	}
}

func TestSealRefusesWhatCannotBeOpened(t *testing.T) {
	key, _ := LoadKey("wv+7DCv0af3nC9Fme+s3OZBWDJc16kPLzKja6ht0Vq0=")
	if _, err := key.Seal(1, "evt", []int{1}); !errors.Is(err, ErrInvalidPlaintext) {
		t.Errorf("an array: %v", err)
	}
	if _, err := key.Seal(0, "evt", struct{}{}); !errors.Is(err, ErrInvalidEnvelope) {
		t.Errorf("keyVersion 0: %v", err)
	}
	if _, err := key.Seal(1, "", struct{}{}); !errors.Is(err, ErrInvalidEnvelope) {
		t.Errorf("no eventId: %v", err)
	}
}

func TestKeyVersionBeyondAnyKeyIsDecryptionFailed(t *testing.T) {
	key, _ := LoadKey("wv+7DCv0af3nC9Fme+s3OZBWDJc16kPLzKja6ht0Vq0=")
	env, _ := key.Seal(1, "evt", struct{}{})
	for _, keyVersion := range []string{"2147483648", "1e20"} {
		body := []byte(`{"specVersion":"1","alg":"A256GCM","keyVersion":` + keyVersion + `,"eventId":"evt","nonce":"` +
			env.Nonce + `","ciphertext":"` + env.Ciphertext + `","tag":"` + env.Tag + `","extra":[1]}`)
		if _, _, err := key.Open(body); !errors.Is(err, ErrDecryptionFailed) {
			t.Errorf("keyVersion %s: %v", keyVersion, err)
		}
	}
	body := []byte(`{"specVersion":"1","alg":"A256GCM","keyVersion":1.0,"eventId":"evt","nonce":"` +
		env.Nonce + `","ciphertext":"` + env.Ciphertext + `","tag":"` + env.Tag + `","extra":[1]}`)
	if _, _, err := key.Open(body); err != nil {
		t.Errorf("keyVersion 1.0 with an unknown field: %v", err)
	}
}
