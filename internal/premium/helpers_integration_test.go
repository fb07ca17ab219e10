package premium_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/premium"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/gagliardetto/solana-go"
)

// premiumNode is an API node with keys and premium routes, and a key of
// account "acme".
type premiumNode struct {
	*apptest.Node
	keys    *apikey.Service
	handler *premium.Handler
	key     string
}

func startNode(t *testing.T, env *apptest.Env, opt premium.Config) *premiumNode {
	t.Helper()
	var deps app.Deps
	pn := &premiumNode{}
	pn.Node = env.StartNode(t, apptest.NodeOptions{
		Configure: func(d *app.Deps) { deps = *d },
		Routes: func(api *app.API) {
			svc, err := apikey.New(context.Background(), apikey.Deps{Store: deps.Store, Redis: apptest.NewRedis(t, env.RedisURL),
				Channel: env.Prefix + apikey.ChannelSuffix, Logger: deps.Logger})
			testenv.Must(t, err, "key service")
			pn.keys = svc
			svc.Routes(api)
			h, err := premium.New(premium.Deps{Auth: svc.Require(apikey.RequireOptions{}), Config: opt, Store: deps.Store, Cache: deps.Cache, Logger: deps.Logger})
			testenv.Must(t, err, "premium")
			pn.handler = h
			h.Routes(api)
		},
	})
	t.Cleanup(pn.keys.Close)
	acc, _, err := pn.keys.Store().EnsureAccount(context.Background(), "acme")
	testenv.Must(t, err, "account")
	k, err := pn.keys.Create(context.Background(), acc.ID, "tests")
	testenv.Must(t, err, "key")
	pn.key = k.Secret
	return pn
}

func (pn *premiumNode) get(t *testing.T, path string) *apptest.Response {
	t.Helper()
	return pn.Do(t, http.MethodGet, path, nil, map[string]string{"x-api-key": pn.key})
}

func (pn *premiumNode) verify(t *testing.T, body []byte) *apptest.Response {
	t.Helper()
	return pn.Do(t, http.MethodPost, "/premium/bulk-verify", body, map[string]string{"x-api-key": pn.key})
}

// raw sends a request exactly as given (no Content-Type added) and
// validates it against the OpenAPI document like Node.Do.
func (pn *premiumNode) raw(t *testing.T, method, path string, body []byte, header map[string]string) *apptest.Response {
	t.Helper()
	req, err := http.NewRequest(method, pn.URL+path, bytes.NewReader(body))
	testenv.Must(t, err, "request")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	testenv.Must(t, err, "send")
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	r := &apptest.Response{Status: res.StatusCode, Header: res.Header, Body: b}
	apptest.Validate(t, req, r)
	return r
}

func pdas(t *testing.T, env *apptest.Env, where string, args ...any) []string {
	t.Helper()
	rows, err := env.Store.Pool().Query(context.Background(), "SELECT pda FROM attestations "+where, args...)
	testenv.Must(t, err, "query pdas")
	var out []string
	for rows.Next() {
		var p string
		testenv.Must(t, rows.Scan(&p), "scan")
		out = append(out, p)
	}
	testenv.Must(t, rows.Err(), "rows")
	return out
}

func count(t *testing.T, env *apptest.Env, where string, args ...any) int64 {
	t.Helper()
	var n int64
	testenv.Must(t, env.Store.Pool().QueryRow(context.Background(), "SELECT count(*) FROM attestations "+where, args...).Scan(&n), "count")
	return n
}

func idsBody(ids []string) []byte {
	var b strings.Builder
	b.WriteString(`{"ids":[`)
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + id + `"`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func randomSig(t *testing.T) solana.Signature {
	var s solana.Signature
	_, err := rand.Read(s[:])
	testenv.Must(t, err, "random")
	return s
}

var program = solana.MustPublicKeyFromBase58(attestation.DefaultProgramID)

// newAgent registers a fresh agent (finalized) at the given time.
func newAgent(t *testing.T, env *apptest.Env, at time.Time, slot uint64) seed.Agent {
	t.Helper()
	var op solana.PublicKey
	_, _ = rand.Read(op[:])
	_, key, err := ed25519.GenerateKey(nil)
	testenv.Must(t, err, "key")
	pda, _, err := attestation.DeriveAgentPDA(program, op)
	testenv.Must(t, err, "agent pda")
	var id, root [32]byte
	copy(id[:], key.Public().(ed25519.PublicKey))
	_, _ = rand.Read(root[:])
	_, err = env.Store.Apply(context.Background(), &store.Batch{Registrations: []store.AgentRegistration{{
		Event: store.Event{TxSignature: randomSig(t).String(), Slot: slot, Commitment: attestation.Finalized},
		PDA:   pda.String(), Operator: op.String(), AgentID: id, PolicyRoot: root, At: at,
	}}})
	testenv.Must(t, err, "register agent")
	return seed.Agent{PDA: pda, Operator: op, Key: key}
}

// reissue copies a record into a new transaction (new pda), for duplicates
// and corrupted records.
func reissue(t *testing.T, r store.AttestationRecord, slot uint64) store.AttestationRecord {
	t.Helper()
	sig := randomSig(t)
	pda, err := attestation.DerivePDA(program, sig, 0)
	testenv.Must(t, err, "pda")
	r.TxSignature, r.EventIndex, r.Slot, r.PDA = sig.String(), 0, slot, pda.String()
	return r
}

func apply(t *testing.T, env *apptest.Env, b *store.Batch) {
	t.Helper()
	_, err := env.Store.Apply(context.Background(), b)
	testenv.Must(t, err, "apply")
}
