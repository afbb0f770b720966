package earshot

import (
	"context"
	"fmt"
)

// RotateKey gives the enterprise a new key and returns it: store its Secret and KeyVersion now, for
// the client's Config and the receiver's Secrets (keep the old one there until the grace ends). The
// answer is sealed with the old key. From then on the client seals with the new key and its next
// token is issued for it; the old key stays valid for the platform's grace period. It is not retried
// once it may have reached the platform: a second rotation would replace the key just made.
func (c *Client) RotateKey(ctx context.Context) (*RotatedKey, error) {
	rotated := &RotatedKey{}
	if err := c.sealedCall(ctx, keyRotatePath, struct{}{}, rotated); err != nil {
		return nil, err
	}
	key, err := LoadKey(rotated.Secret)
	if err != nil || rotated.KeyVersion < 1 || rotated.KeyVersion > MaxKeyVersion || rotated.KeyVersion == c.KeyVersion() {
		return nil, &ResponseError{HTTPStatus: 200, Msg: fmt.Sprintf(
			"the key rotation's answer is not a new {keyVersion, secret} (keyVersion %d): the key may have been "+
				"rotated all the same; the client keeps the old one, valid for the grace period", rotated.KeyVersion)}
	}
	c.useKey(rotated.KeyVersion, key)
	return rotated, nil
}

// PortalLink mints a one-time link into the partner portal, for a session of the given access
// (PortalView or PortalManage; "" for the platform's default). Open it before ExpiresAt.
func (c *Client) PortalLink(ctx context.Context, access string) (*PortalLink, error) {
	plaintext := map[string]string{}
	switch access {
	case "":
	case PortalView, PortalManage:
		plaintext["access"] = access
	default:
		return nil, localRefusal("access", `must be "view" or "manage"`)
	}
	link := &PortalLink{}
	if err := c.sealedCall(ctx, portalLinkPath, plaintext, link); err != nil {
		return nil, err
	}
	if link.URL == "" || link.ExpiresAt.IsZero() {
		return nil, &ResponseError{HTTPStatus: 200, Msg: "the portal link answer is not {url, expiresAt}"}
	}
	return link, nil
}
