package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/x402/verifier"
	"github.com/gagliardetto/solana-go"
)

// paidRoute is a cheap paid route (POST, a JSON body of ids).
const paidRoute = "/premium/bulk-verify"

// comeback is the state of TestFleetComesBackFromABackup.
type comeback struct {
	t        *testing.T
	ctx      context.Context
	f        *Fleet
	dump     string
	pay      *payer
	payToATA solana.PublicKey
	hooks    *hookReceiver
	webhook  string          // its id
	before   map[string]bool // attestations indexed before the webhook was made: not delivered to it
	// The paid requests: the first before the backup, the second after
	// it (its ledger row and kept answer are lost with the database).
	first, second paid
	balance       uint64     // payTo's balance before the kill
	witnessed     checkpoint // the checkpoint served before the kill
}

// paid is a paid request and its first answer.
type paid struct {
	body, payment string
	answer        answer
}

// TestFleetComesBackFromABackup takes a backup under live traffic
// (indexing, webhook deliveries, paid requests), goes on for a while,
// kills every attestd process and PostgreSQL, restores the backup into a
// new server on the same port, restarts the processes, and checks: every
// attestation on the chain is served again; the log regrows to its
// witnessed size (no node serving a smaller checkpoint meanwhile) and the
// witness accepts the next checkpoint; the ledger equals the chain's
// settlements to the unit, the lost payment recovered; a receiver
// deduplicating on webhook-id saw each event exactly once; a payment
// presented again is not charged twice; AttestdProcessDown fired in the
// fleet's Prometheus while the processes were down and resolved after.
func TestFleetComesBackFromABackup(t *testing.T) {
	c := startComeback(t)
	c.subscribe()
	c.beforeBackup()
	c.afterBackup()
	alertsSeen := watchAlerts(c.f)
	cps := c.outage()

	t.Run("the log regrows to its witnessed size and the witness accepts the next checkpoint", func(t *testing.T) { c.checkLog(t, cps) })
	t.Run("the ledger equals the chain's settlements; a payment presented again is not charged twice", c.checkPayments)
	t.Run("every attestation on the chain is served again", c.checkServed)
	t.Run("a receiver deduplicating on webhook-id saw each event exactly once", c.checkDelivered)
	t.Run("the alerts fired and resolved in the fleet's Prometheus", func(t *testing.T) { c.checkAlerts(t, alertsSeen) })
}

// startComeback starts the fleet: two API nodes, one indexer, one worker,
// PostgreSQL without a replica, the witnessed log, Prometheus with the
// shipped rules (12-fold faster), and x402 payments settled on the chain
// simulator by the nodes themselves (the indexer's reconciler recovers
// settlements to payTo).
func startComeback(t *testing.T) *comeback {
	bin := testenv.BuildAttestd(t)
	dir := testenv.TempDir(t, "fleet-restore-")
	c := &comeback{t: t, ctx: context.Background(), dump: filepath.Join(dir, "attestd.dump")}
	var accounts devnet.Payment
	setup := func(ctx context.Context, chain *devnet.Chain) ([]string, error) {
		var err error
		if accounts, err = chain.NewPayment(solana.LAMPORTS_PER_SOL, 1_000_000); err != nil {
			return nil, err
		}
		keyFile := filepath.Join(dir, "fee-payer.json")
		if err := devnet.WriteKeypair(keyFile, accounts.FeePayer); err != nil {
			return nil, err
		}
		return []string{"ATTESTD_X402_PAY_TO=" + accounts.PayTo.String(), "ATTESTD_X402_NETWORK=solana-devnet",
			"ATTESTD_X402_FEE_PAYER_KEYPAIR=" + keyFile, "ATTESTD_X402_RPC_URL=" + chain.RPCURL()}, nil
	}
	f, err := Start(c.ctx, Options{Bin: bin, Dir: filepath.Join(dir, "fleet"), NginxConf: "../../../deploy/nginx.conf",
		NoReplica: true, Serve: 2, Index: 1, Worker: 1,
		Agents: 5, Attestations: 200, FinalityDepth: 8, SlotInterval: 100 * time.Millisecond, WitnessedLog: true,
		RulesFile: "../../../deploy/prometheus/attestd-rules.yml", AlertTimeScale: 12,
		Env: []string{
			"ATTESTD_RATE_LIMIT=100000", "ATTESTD_RATE_WINDOW=60s", "ATTESTD_INDEXER_POLL_INTERVAL=250ms",
			"ATTESTD_WEBHOOK_CLAIM_IDLE=2s", "ATTESTD_WEBHOOK_POLL_INTERVAL=20ms", "ATTESTD_WEBHOOK_RETRY_SCHEDULE=1s,1s,1s",
			"ATTESTD_SHUTDOWN_TIMEOUT=5s", "ATTESTD_X402_RECONCILE_INTERVAL=1s",
		},
		Setup: setup})
	testenv.Must(t, err, "start the fleet")
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range f.Procs() {
				b, _ := os.ReadFile(p.LogPath)
				t.Logf("%s log (tail):\n%s", p.Name, tail(string(b), 3000))
			}
		}
		f.Close()
	})
	c.f, c.payToATA = f, accounts.PayToATA
	c.pay = &payer{base: f.URL(), chain: f.Chain, key: accounts.Payer}
	return c
}

// node is an API node's address, for reads past the edge's cache.
func (c *comeback) node() string { return c.f.Serve[0].Addr }

// subscribe waits for the initial attestations to be indexed, makes an
// API key (attestd keys create) and, through the API, a webhook for
// attestation.created at the receiver, and waits until the receiver
// answered its verification challenge.
func (c *comeback) subscribe() {
	t := c.t
	initial := chainAttestationEvents(t, c.f.Chain, "")
	c.waitServed(initial)
	c.before = map[string]bool{}
	for pda := range initial {
		c.before[pda] = true
	}
	out, err := c.f.Run(c.ctx, "keys", "create", "--account", "restore")
	testenv.Must(t, err, "attestd keys create")
	key := strings.TrimSpace(out)
	c.hooks = newHookReceiver(t)
	var made struct{ Data struct{ ID, Secret string } }
	c.api(http.MethodPost, "/webhooks", key, fmt.Sprintf(`{"url": %q, "events": ["attestation.created"], "description": "restore test"}`,
		c.hooks.srv.URL+"/hooks"), http.StatusCreated, &made)
	c.webhook = made.Data.ID
	c.hooks.know(made.Data.Secret)
	testenv.WaitForState(t, "the webhook verified (the receiver answered the challenge)", testenv.Patience, testenv.Every(200*time.Millisecond, func() (bool, string) {
		var wh struct {
			Data struct{ Verification struct{ Status string } }
		}
		c.api(http.MethodGet, "/webhooks/"+c.webhook, key, "", http.StatusOK, &wh)
		return wh.Data.Verification.Status == "verified", wh.Data.Verification.Status
	}))
	t.Logf("%d attestations indexed before webhook %s was made", len(c.before), c.webhook)
}

// api calls an API node with the key and decodes the answer, which must
// have status want.
func (c *comeback) api(method, path, key, body string, want int, out any) {
	c.t.Helper()
	req, err := http.NewRequest(method, "http://"+c.node()+"/api/v1"+path, strings.NewReader(body))
	testenv.Must(c.t, err, "request")
	req.Header.Set("x-api-key", key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	testenv.Must(c.t, err, "%s %s", method, path)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		c.t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	testenv.Must(c.t, json.Unmarshal(b, out), "decode %s", b)
}

// beforeBackup: chain traffic (10 attestations a second), deliveries
// under way, one paid request; then attestd backup.
func (c *comeback) beforeBackup() {
	t := c.t
	tr := startTraffic(c.f.Chain, 5, 2, 200*time.Millisecond)
	defer func() { testenv.Must(t, tr.stop(), "chain traffic") }()
	c.first = c.payOnce("first", 0, 3)
	testenv.WaitForState(t, "deliveries under way", testenv.Patience, func() (bool, string) {
		ev, _ := c.hooks.seen()
		return len(ev) >= 20, fmt.Sprint(len(ev))
	})
	out, err := c.f.Run(c.ctx, "backup", "--file", c.dump)
	testenv.Must(t, err, "attestd backup")
	ev, _ := c.hooks.seen()
	t.Logf("backup %s taken under traffic: %d attestations on chain, %d events delivered so far", strings.TrimSpace(out),
		len(chainAttestationEvents(t, c.f.Chain, "")), len(ev))
}

// payOnce pays for the paid route with a body naming attestations
// [from, to) of the chain, and checks the answer: 200, settled.
func (c *comeback) payOnce(name string, from, to int) paid {
	t := c.t
	t.Helper()
	var ids []string
	for pda := range c.before {
		ids = append(ids, pda)
	}
	sort.Strings(ids)
	b, _ := json.Marshal(map[string][]string{"ids": ids[from:to]})
	p := paid{body: string(b)}
	p.payment = c.pay.sign(t, paidRoute, p.body)
	p.answer = c.pay.post(t, paidRoute, p.body, p.payment)
	if p.answer.Status != http.StatusOK || p.answer.Settled == "" {
		t.Fatalf("%s paid request: %d (settled %q) %s", name, p.answer.Status, p.answer.Settled, p.answer.Body)
	}
	return p
}

// afterBackup goes on after the backup: more chain traffic, a second paid
// request, deliveries; then, traffic stopped, it waits until every
// attestation is indexed and delivered, and the served checkpoint covers
// every one of them, cosigned by the witness.
func (c *comeback) afterBackup() {
	t := c.t
	mark := len(chainAttestationEvents(t, c.f.Chain, ""))
	tr := startTraffic(c.f.Chain, 5, 2, 200*time.Millisecond)
	c.second = c.payOnce("second", 3, 6)
	testenv.WaitFor(t, "50 more attestations on chain", testenv.Patience, func() bool {
		return len(chainAttestationEvents(t, c.f.Chain, "")) >= mark+50
	})
	testenv.Must(t, tr.stop(), "chain traffic")
	chain := chainAttestationEvents(t, c.f.Chain, c.webhook)
	c.waitServed(chain)
	c.waitDelivered(chain)
	testenv.WaitForState(t, "the witnessed checkpoint covers every attestation", testenv.Patience, testenv.Every(100*time.Millisecond, func() (bool, string) {
		cp, err := readCheckpoint(c.ctx, c.node(), c.f.Witness.Name)
		c.witnessed = cp
		return err == nil && cp.Status == http.StatusOK && cp.Cosigned && cp.Size == int64(len(chain)), fmt.Sprintf("%+v %v", cp, err)
	}))
	var err error
	c.balance, err = c.f.Chain.TokenBalance(c.payToATA)
	testenv.Must(t, err, "payTo's balance")
	st := c.openStore()
	defer st.Close()
	for _, p := range []paid{c.first, c.second} {
		row, err := st.PaymentByTransaction(c.ctx, p.answer.Settled)
		testenv.Must(t, err, "the ledger row of %s", p.answer.Settled)
		if row.Status != store.PaymentSettled || row.Recovered {
			t.Fatalf("before the kill, payment %s: %s recovered=%v", row.TxSignature, row.Status, row.Recovered)
		}
	}
	t.Logf("after the backup: %d attestations on chain (%d since), second payment settled (%s), checkpoint size %d cosigned, payTo holds %d",
		len(chain), len(chain)-mark, c.second.answer.Settled, c.witnessed.Size, c.balance)
}

// openStore opens the fleet's database (the primary's URL).
func (c *comeback) openStore() *store.Store {
	st, err := store.Open(c.ctx, c.f.Primary.URL, store.Options{MaxConns: 2})
	testenv.Must(c.t, err, "open the store")
	return st
}

// waitServed waits until the API lists exactly the attestations of want.
func (c *comeback) waitServed(want map[string]chainEvent) {
	c.t.Helper()
	testenv.WaitForState(c.t, fmt.Sprintf("the API lists the %d attestations on chain", len(want)), testenv.Patience,
		testenv.Every(250*time.Millisecond, func() (bool, string) {
			got, err := servedAttestations(c.ctx, c.node())
			if err != nil {
				return false, err.Error()
			}
			diff := compareSets(want, got)
			return diff == "", diff
		}))
}

// expectedDeliveries is the webhook-ids of the events the webhook is to
// get: every attestation of chain not indexed before it was made.
func (c *comeback) expectedDeliveries(chain map[string]chainEvent) map[string]chainEvent {
	want := map[string]chainEvent{}
	for pda, e := range chain {
		if !c.before[pda] {
			want[e.WebhookID] = e
		}
	}
	return want
}

// waitDelivered waits until the receiver has every event of chain the
// webhook is to get.
func (c *comeback) waitDelivered(chain map[string]chainEvent) {
	c.t.Helper()
	want := c.expectedDeliveries(chain)
	testenv.WaitForState(c.t, fmt.Sprintf("the receiver has the %d events", len(want)), testenv.Patience,
		testenv.Every(100*time.Millisecond, func() (bool, string) {
			got, _ := c.hooks.seen()
			diff := compareSets(want, got)
			return diff == "", diff
		}))
}

// outage kills every attestd process (SIGKILL: they stay Prometheus
// targets) while the chain goes on, loses PostgreSQL and restores the
// backup into a new server at its address, waits until
// AttestdProcessDown fires for every process, and restarts them
// (restart). It returns the watch of the checkpoints the API nodes serve
// from their restart on.
func (c *comeback) outage() *checkpointWatch {
	t := c.t
	tr := startTraffic(c.f.Chain, 5, 2, 200*time.Millisecond)
	procs := c.f.Procs()
	for _, p := range procs {
		p.Kill()
	}
	start := time.Now()
	testenv.Must(t, c.f.RestorePrimary(c.ctx, c.dump), "restore the primary")
	restored := time.Since(start)
	c.checkHeld()
	fired := testenv.WaitForState(t, "AttestdProcessDown firing for every process", testenv.Patience, testenv.Every(250*time.Millisecond, func() (bool, string) {
		n, list := alerts(c.ctx, c.f, "AttestdProcessDown", "firing")
		return n == len(procs), list
	}))
	cps := watchCheckpoints(c.f, c.witnessed.Size)
	c.restart()
	c.waitNoProcessDown()
	testenv.Must(t, tr.stop(), "chain traffic")
	t.Logf("every process killed, PostgreSQL lost and restored in %v; AttestdProcessDown fired for all %d after %v; all back (and the alert gone) %v after the kill",
		restored.Round(time.Millisecond), len(procs), (restored + fired).Round(time.Second), time.Since(start).Round(time.Second))
	return cps
}

// checkHeld: the restored database holds a smaller log than the witness
// cosigned before the kill, and attestd restore held it.
func (c *comeback) checkHeld() {
	t := c.t
	st := c.openStore()
	defer st.Close()
	h, err := st.ReadLogHold(c.ctx)
	testenv.Must(t, err, "read the log's hold")
	if h.HeldSince.IsZero() || h.Size >= c.witnessed.Size {
		t.Fatalf("restored log: %+v; want it held, and below the %d leaves the witness cosigned", h, c.witnessed.Size)
	}
	var backups int
	testenv.Must(t, st.Pool().QueryRow(c.ctx, `SELECT count(*) FROM backups`).Scan(&backups), "backups")
	if backups != 1 { // the backup it came from: its age is watched again
		t.Fatalf("the restored database records %d backups, want the one it was restored from", backups)
	}
	t.Logf("restored: the log has %d leaves (the witness cosigned %d), held since %s; the restored database records the backup",
		h.Size, c.witnessed.Size, h.HeldSince.Format(time.RFC3339))
}

// restart brings the processes back, the API nodes first: while the log
// is held and no indexer regrows it, each must refuse its checkpoint (503,
// saying why, and /health says so) rather than serve the restored older
// one. Then the indexer, which asks the witness and regrows the log, and
// the worker.
func (c *comeback) restart() {
	t := c.t
	ctx, cancel := context.WithTimeout(c.ctx, testenv.Patience)
	defer cancel()
	for _, p := range c.f.Serve {
		testenv.Must(t, p.Restart(ctx), "restart %s", p.Name)
	}
	var why string
	testenv.WaitForState(t, "every API node refuses the held log's checkpoint, and its /health says why", testenv.Patience, testenv.Every(100*time.Millisecond, func() (bool, string) {
		for _, p := range c.f.Serve {
			cp, err := readCheckpoint(c.ctx, p.Addr, c.f.Witness.Name)
			if err != nil || cp.Status != http.StatusServiceUnavailable {
				return false, fmt.Sprintf("%s: %+v %v", p.Name, cp, err)
			}
			why = cp.Text
			res, err := http.Get("http://" + p.Addr + "/api/v1/health")
			if err != nil {
				return false, err.Error()
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if !strings.Contains(string(b), "restored from a backup") {
				return false, fmt.Sprintf("%s /health: %d %s", p.Name, res.StatusCode, b)
			}
		}
		return true, ""
	}))
	t.Logf("API nodes up before the indexer: the held log's checkpoint is refused: %.300s", why)
	for _, p := range append(append([]*Proc{}, c.f.Index...), c.f.Worker...) {
		testenv.Must(t, p.Restart(ctx), "restart %s", p.Name)
	}
}

// waitNoProcessDown waits until no AttestdProcessDown is pending or firing.
func (c *comeback) waitNoProcessDown() {
	testenv.WaitForState(c.t, "AttestdProcessDown resolved after the restart", testenv.Patience, testenv.Every(250*time.Millisecond, func() (bool, string) {
		n, list := alerts(c.ctx, c.f, "AttestdProcessDown", "")
		return n == 0, list
	}))
}

// checkLog: the checkpoint served after the restore is at least the size
// the witness cosigned before the kill, cosigned, and consistent with it
// (the same root at the same size); no node served a smaller one
// meanwhile; and once the chain's traffic is indexed, the next checkpoint,
// covering every attestation, is cosigned too.
func (c *comeback) checkLog(t *testing.T, cps *checkpointWatch) {
	var back checkpoint
	regrew := testenv.WaitForState(t, "a checkpoint served again, cosigned", testenv.Patience, testenv.Every(100*time.Millisecond, func() (bool, string) {
		cp, err := readCheckpoint(c.ctx, c.node(), c.f.Witness.Name)
		back = cp
		return err == nil && cp.Status == http.StatusOK, fmt.Sprintf("%d %.300s %v", cp.Status, cp.Text, err)
	}))
	if back.Size < c.witnessed.Size || !back.Cosigned {
		t.Fatalf("served after the restore: size %d (cosigned %v); the witness cosigned %d before", back.Size, back.Cosigned, c.witnessed.Size)
	}
	testenv.Must(t, checkConsistency(c.ctx, c.node(), c.witnessed, back), "the log after the restore extends the one before")
	chain := chainAttestationEvents(t, c.f.Chain, "")
	var next checkpoint
	testenv.WaitForState(t, "the next checkpoint, covering every attestation, cosigned", testenv.Patience, testenv.Every(100*time.Millisecond, func() (bool, string) {
		cp, err := readCheckpoint(c.ctx, c.node(), c.f.Witness.Name)
		next = cp
		return err == nil && cp.Status == http.StatusOK && cp.Cosigned && cp.Size == int64(len(chain)), fmt.Sprintf("%+v %v", cp, err)
	}))
	testenv.Must(t, checkConsistency(c.ctx, c.node(), c.witnessed, next), "the next checkpoint extends the witnessed one")
	served, held, below, reason := cps.stop()
	if len(below) > 0 {
		t.Errorf("a node served a checkpoint below the witnessed size %d after the restore: %v", c.witnessed.Size, below)
	}
	t.Logf("log: witnessed size %d before the kill; served again at size %d (cosigned, consistent with it) %v after the processes were back; next checkpoint %d cosigned; of the nodes' answers since their restart %d refused (the last: %s), %d served, none below %d",
		c.witnessed.Size, back.Size, regrew.Round(time.Millisecond), next.Size, held, reason, served, c.witnessed.Size)
}

// checkPayments: the lost payment's row is back, recovered from the
// chain; the ledger's settled total equals payTo's balance; the second
// payment presented again is refused (payment_answer_lost), the first
// answered as the first time, neither charged again.
func (c *comeback) checkPayments(t *testing.T) {
	st := c.openStore()
	defer st.Close()
	var row store.Payment
	testenv.WaitForState(t, "the lost payment recovered from the chain", testenv.Patience, testenv.Every(200*time.Millisecond, func() (bool, string) {
		var err error
		row, err = st.PaymentByTransaction(c.ctx, c.second.answer.Settled)
		return err == nil && row.Recovered && row.Status == store.PaymentSettled, fmt.Sprintf("%+v %v", row, err)
	}))
	ledger := func() (sum uint64, rows, recovered int) {
		testenv.Must(t, st.Pool().QueryRow(c.ctx, `SELECT COALESCE(sum(amount), 0), count(*), count(*) FILTER (WHERE recovered)
			FROM payments WHERE status = 'settled'`).Scan(&sum, &rows, &recovered), "the ledger")
		return sum, rows, recovered
	}
	balance := func() uint64 {
		b, err := c.f.Chain.TokenBalance(c.payToATA)
		testenv.Must(t, err, "payTo's balance")
		return b
	}
	sum, rows, recovered := ledger()
	if sum != balance() || balance() != c.balance || rows != 2 || recovered != 1 {
		t.Fatalf("ledger: %d settled payments (%d recovered) of %d units; payTo holds %d (held %d before the kill)", rows, recovered, sum, balance(), c.balance)
	}
	again := c.pay.post(t, paidRoute, c.second.body, c.second.payment)
	if again.Status != http.StatusConflict || again.Code != "PAYMENT_REPLAYED" || again.Reason != verifier.ReasonAnswerLost {
		t.Errorf("the lost payment presented again: %d %s", again.Status, again.Body)
	}
	first := c.pay.post(t, paidRoute, c.first.body, c.first.payment)
	if first.Status != http.StatusOK || !bytes.Equal(first.Body, c.first.answer.Body) || first.Settled != c.first.answer.Settled {
		t.Errorf("the first payment presented again: %d (settled %s) %s\nfirst answer: %s", first.Status, first.Settled, first.Body, c.first.answer.Body)
	}
	if s, r, _ := ledger(); s != sum || r != rows || balance() != c.balance {
		t.Errorf("presenting the payments again charged: ledger %d units in %d payments, payTo %d (was %d)", s, r, balance(), c.balance)
	}
	t.Logf("ledger: %d settled payments, %d units = payTo's balance; the lost one (%s) recovered; presented again: lost %d %s, first %d (same answer)",
		rows, sum, row.TxSignature, again.Status, again.Reason, first.Status)
}

// checkServed: the API lists every attestation on the chain, once.
func (c *comeback) checkServed(t *testing.T) {
	chain := chainAttestationEvents(t, c.f.Chain, "")
	c.waitServed(chain)
	got, err := servedAttestations(c.ctx, c.node())
	testenv.Must(t, err, "list attestations")
	for pda, n := range got {
		if n != 1 {
			t.Errorf("attestation %s listed %d times", pda, n)
		}
	}
	var stats struct {
		Attestations int `json:"attestations"`
	}
	testenv.Must(t, getJSON(c.ctx, "http://"+c.f.Serve[1].Addr+"/api/v1/stats", &stats), "stats")
	if stats.Attestations != len(chain) {
		t.Errorf("/stats counts %d attestations; the chain recorded %d", stats.Attestations, len(chain))
	}
	t.Logf("%d attestations on chain, each listed once by the API after the restore", len(chain))
}

// checkDelivered: the receiver, deduplicating on webhook-id, holds
// exactly the events the chain produced after the webhook was made, each
// under the webhook-id derived from its chain event, with its own data;
// no delivery failed its signature.
func (c *comeback) checkDelivered(t *testing.T) {
	chain := chainAttestationEvents(t, c.f.Chain, c.webhook)
	want := c.expectedDeliveries(chain)
	c.waitDelivered(chain)
	got, arrived := c.hooks.seen()
	if diff := compareSets(want, got); diff != "" {
		t.Errorf("deliveries: %s", diff)
	}
	for id, e := range got {
		if w := want[id]; w.hookEvent != e {
			t.Errorf("delivery %s carries %+v; its chain event is %+v", id, e, w.hookEvent)
		}
	}
	c.hooks.mu.Lock()
	refused := c.hooks.refused
	c.hooks.mu.Unlock()
	if len(refused) > 0 {
		t.Errorf("the receiver refused %d deliveries: %v", len(refused), refused[:min(5, len(refused))])
	}
	twice, most := 0, 0
	for _, n := range arrived {
		if n > 1 {
			twice++
		}
		most = max(most, n)
	}
	t.Logf("webhook: %d events, each received once after deduplication on webhook-id; %d ids arrived more than once (at most %d times: the refill after the restore delivers again, under the same ids, what the backup did not record as delivered)",
		len(want), twice, most)
}

// checkAlerts: AttestdProcessDown fired for every process while they were
// down and is gone after the restart (waited for in outage); the
// payments recovery fires AttestdPaymentsRecovered. It logs every alert
// seen since the kill.
func (c *comeback) checkAlerts(t *testing.T, w *alertWatch) {
	testenv.WaitForState(t, "AttestdPaymentsRecovered firing", testenv.Patience, testenv.Every(250*time.Millisecond, func() (bool, string) {
		n, list := alerts(c.ctx, c.f, "AttestdPaymentsRecovered", "firing")
		return n == 1, list
	}))
	seen := w.stop()
	var names []string
	for k, v := range seen {
		names = append(names, k+"="+v)
	}
	sort.Strings(names)
	if n, list := alerts(c.ctx, c.f, "AttestdProcessDown", ""); n != 0 {
		t.Errorf("AttestdProcessDown still there: %s", list)
	}
	if seen["AttestdProcessDown{attestd-index}"] != "firing" || seen["AttestdProcessDown{attestd-serve}"] != "firing" || seen["AttestdProcessDown{attestd-worker}"] != "firing" {
		t.Errorf("AttestdProcessDown did not fire for every job: %v", names)
	}
	_, now := alerts(c.ctx, c.f, "", "")
	t.Logf("alerts seen since the kill (highest state): %s; now: %s", strings.Join(names, " "), now)
}
