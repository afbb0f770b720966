package platformtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Erasure is an erasure request as the admin API shows it, with its progress per endpoint.
type Erasure struct {
	ErasureID  int64  `json:"erasureId"`
	State      string `json:"state"` // running, complete or confirmed
	Recordings int    `json:"recordings"`
	Endpoints  []struct {
		EndpointID   int64 `json:"endpointId"`
		Deletions    int   `json:"deletions"`
		Acknowledged int   `json:"acknowledged"`
		Confirmed    int   `json:"confirmed"`
	} `json:"endpoints"`
}

// EraseDevice asks for every recording of a device to be erased; the answer holds the erasure's id
// and how many recordings it covers.
func (p *Platform) EraseDevice(ctx context.Context, enterpriseID int64, deviceUID, reason string) (Erasure, error) {
	var created Erasure
	path := fmt.Sprintf("/admin/v1/enterprises/%d/erasures", enterpriseID)
	body := mustJSON(map[string]string{"deviceUid": deviceUID, "reason": reason})
	err := p.admin(ctx, http.MethodPost, path, "application/json", body, &created)
	return created, err
}

// WaitForErasure polls the erasure until it is in state.
func (p *Platform) WaitForErasure(ctx context.Context, erasureID int64, state string) (Erasure, error) {
	for {
		var erasure Erasure
		if err := p.admin(ctx, http.MethodGet, fmt.Sprintf("/admin/v1/erasures/%d", erasureID), "", nil, &erasure); err != nil {
			return erasure, err
		}
		if erasure.State == state {
			return erasure, nil
		}
		select {
		case <-ctx.Done():
			return erasure, fmt.Errorf("platformtest: the erasure is still %s, not %s", erasure.State, state)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// SignedErasureReport is an erasure's report as the platform signed it: Signature is base64url
// Ed25519 over the RFC 8785 canonical JSON of Report.
type SignedErasureReport struct {
	Report    json.RawMessage `json:"report"`
	Signature string          `json:"signature"`
}

// ErasureReport fetches the erasure's signed report.
func (p *Platform) ErasureReport(ctx context.Context, erasureID int64) (SignedErasureReport, error) {
	var signed SignedErasureReport
	path := fmt.Sprintf("/admin/v1/erasures/%d/report", erasureID)
	err := p.admin(ctx, http.MethodGet, path, "", nil, &signed)
	return signed, err
}

// ErasureKey is the public key that verifies erasure reports, a JWK (OKP, Ed25519).
type ErasureKey struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// FetchErasureKey reads the key the platform publishes, with no credentials, on its partner listener.
func (p *Platform) FetchErasureKey(ctx context.Context) (ErasureKey, error) {
	var key ErasureKey
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.PartnerURL+"/.well-known/earshot-erasure-key", nil)
	if err != nil {
		return key, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return key, err
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		return key, err
	}
	if resp.StatusCode != http.StatusOK {
		return key, fmt.Errorf("platformtest: the erasure key answered %d: %s", resp.StatusCode, text)
	}
	return key, json.Unmarshal(text, &key)
}
