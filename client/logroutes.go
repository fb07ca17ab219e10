package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// raw sends r and returns a 2xx body as it is (any other status is an
// *APIError).
func (c *Client) raw(ctx context.Context, r request) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	status, header, body, err := c.roundTrip(ctx, r)
	if err != nil {
		return nil, err
	}
	if status < 200 || status > 299 {
		return nil, newAPIError(r.method, r.path, status, header, body)
	}
	return body, nil
}

// maxVerifierKey bounds the answer of GET /log/key.
const maxVerifierKey = 1 << 10

// LogKey calls GET /log/key: the log's verifier key
// (<name>+<hash>+<base64>; the newest during a key rotation). Fetching the key from the service you are
// checking proves nothing: pin the key you got from the operator out of
// band and compare (the CLI's --log-key).
func (c *Client) LogKey(ctx context.Context) (string, error) {
	r := request{method: http.MethodGet, path: "/log/key", accept: "text/plain, application/json"}
	body, err := c.raw(ctx, r)
	if err != nil {
		return "", err
	}
	key := strings.TrimSpace(string(body))
	if first, _, rotating := strings.Cut(key, "\n"); rotating && !strings.HasPrefix(key, "{") {
		// During a key rotation: the new key, then the old one (both sign
		// every checkpoint); the first is the one to pin from now on.
		key = strings.TrimSpace(first)
	}
	if strings.HasPrefix(key, "{") {
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(body, &env); err != nil {
			return "", fmt.Errorf("attestd client: GET /log/key: decode response: %w", err)
		}
		var k struct {
			Key string `json:"key"`
		}
		if json.Unmarshal(env.Data, &key) != nil {
			if err := json.Unmarshal(env.Data, &k); err != nil {
				return "", fmt.Errorf("attestd client: GET /log/key: decode response: %w", err)
			}
			key = k.Key
		}
	}
	if key == "" || len(key) > maxVerifierKey || strings.ContainsAny(key, " \t\r\n") {
		return "", fmt.Errorf("attestd client: GET /log/key: not a verifier key: %s", clip([]byte(key)))
	}
	return key, nil
}

// LogCheckpoint fetches the latest checkpoint of the log whose origin is
// origin (the verifier key's name: LogVerifier.Origin), from the origin's
// path on the service's host (C2SP tlog-tiles: origin example.com/log is
// served at https://example.com/log/checkpoint; "" means /log). The note
// comes unverified, with the witnesses' cosignatures (see
// LogVerifier.OpenCheckpoint). It asks caches on the way to revalidate, so
// a monitor never takes a stale edge copy for a rollback.
func (c *Client) LogCheckpoint(ctx context.Context, origin string) ([]byte, error) {
	path := OriginPath(origin) + "/checkpoint"
	r := request{method: http.MethodGet, path: path, accept: "text/plain", noCache: true, site: true}
	body, err := c.raw(ctx, r)
	if err != nil {
		return nil, err
	}
	if len(body) > maxCheckpoint {
		return nil, fmt.Errorf("attestd client: GET %s: %d bytes, more than %d", path, len(body), maxCheckpoint)
	}
	return body, nil
}

// OriginPath is where a log of this origin serves its checkpoint and
// tiles: the origin without its host ("example.com/log" is at "/log");
// "/log" for an origin without a path.
func OriginPath(origin string) string {
	if _, p, ok := strings.Cut(origin, "/"); ok && p != "" {
		return "/" + strings.TrimRight(p, "/")
	}
	return "/log"
}

// LogProof calls GET /attestations/:id/proof. While the attestation is not
// finalized or not yet appended the service answers 409: the error then
// wraps both ErrNotLogged and the *APIError.
func (c *Client) LogProof(ctx context.Context, pda string) (*LogProof, error) {
	id, err := pathID("attestation pda", pda)
	if err != nil {
		return nil, err
	}
	var body struct {
		Data LogProof `json:"data"`
	}
	if err := c.do(ctx, request{method: http.MethodGet, path: "/attestations/" + id + "/proof"}, &body); err != nil {
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusConflict {
			return nil, fmt.Errorf("%w: %w", ErrNotLogged, err)
		}
		return nil, err
	}
	return &body.Data, nil
}

// LogConsistency calls GET /log/consistency?from=N&to=M: the proof that the
// tree of from leaves is a prefix of the tree of to leaves.
func (c *Client) LogConsistency(ctx context.Context, from, to int64) (*ConsistencyProof, error) {
	if from < 0 || to < from {
		return nil, fmt.Errorf("attestd client: consistency from %d to %d: need 0 <= from <= to", from, to)
	}
	q := url.Values{"from": {strconv.FormatInt(from, 10)}, "to": {strconv.FormatInt(to, 10)}}
	var body struct {
		Data ConsistencyProof `json:"data"`
	}
	if err := c.do(ctx, request{method: http.MethodGet, path: "/log/consistency", query: q}, &body); err != nil {
		return nil, err
	}
	if body.Data.From != from || body.Data.To != to {
		return nil, fmt.Errorf("%w: asked from %d to %d, answered from %d to %d", ErrConsistencyProof, from, to, body.Data.From, body.Data.To)
	}
	return &body.Data, nil
}

// VerifyAttestation fetches the attestation pda and its log proof and
// checks them with VerifyInclusion: the attestation as served is in the
// log the operator's key signs.
func (c *Client) VerifyAttestation(ctx context.Context, v *LogVerifier, pda string) (*Attestation, *Inclusion, error) {
	a, err := c.GetAttestation(ctx, pda)
	if err != nil {
		return nil, nil, err
	}
	p, err := c.LogProof(ctx, pda)
	if err != nil {
		return a, nil, err
	}
	if a.PDA != pda {
		return a, nil, fmt.Errorf("%w: asked for %s, served %s", ErrLeafMismatch, pda, a.PDA)
	}
	in, err := VerifyInclusion(v, a, p)
	return a, in, err
}
