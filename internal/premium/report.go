package premium

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/store"
	"github.com/gofiber/fiber/v2"
	"github.com/gowebpki/jcs"
	"golang.org/x/sync/errgroup"
)

// Anomaly kinds.
const (
	KindBurst            = "burst"
	KindLongGap          = "long_gap"
	KindAfterRevocation  = "after_revocation"
	KindDuplicateHash    = "duplicate_hash"
	KindInvalidSignature = "invalid_signature"
)

// Report is the forensic report of one agent over a period.
type Report struct {
	Agent         attestation.Agent          `json:"agent"`
	Period        Period                     `json:"period"`
	Summary       Summary                    `json:"summary"`
	Timeline      []TimelineDay              `json:"timeline"`
	Integrity     Integrity                  `json:"integrity"`
	Anomalies     []Anomaly                  `json:"anomalies"`
	PolicyHistory []attestation.PolicyChange `json:"policyHistory"`
	Thresholds    Rules                      `json:"thresholds"`
	GeneratedAt   attestation.Time           `json:"generatedAt"`
	// ReportHash is the hex SHA-256 of the RFC 8785 (JCS) canonical JSON
	// of this object without the reportHash member.
	ReportHash string `json:"reportHash,omitempty"`
}

// Period is the half-open range the report covers; null bounds are open.
type Period struct {
	From *attestation.Time `json:"from"`
	To   *attestation.Time `json:"to"`
}

// Summary counts the period's attestations.
type Summary struct {
	Totals        Totals            `json:"totals"`
	ByType        store.ByType      `json:"byType"`
	FirstAt       *attestation.Time `json:"firstAt"`
	LastAt        *attestation.Time `json:"lastAt"`
	ActiveDays    int               `json:"activeDays"`
	AnomalyCounts map[string]int64  `json:"anomalyCounts"`
}

// Totals are the period's counts.
type Totals struct {
	Attestations int64 `json:"attestations"`
	Finalized    int64 `json:"finalized"`
	Unfinalized  int64 `json:"unfinalized"`
	PrivacyMode  int64 `json:"privacyMode"`
}

// TimelineDay is one active UTC day of the timeline.
type TimelineDay struct {
	Day    string       `json:"day"` // YYYY-MM-DD
	Count  int64        `json:"count"`
	ByType store.ByType `json:"byType"`
}

// Integrity says how far the period's records can be trusted.
type Integrity struct {
	// SignaturesChecked: every attestation's signature was verified at
	// ingest, so this is the period's total.
	SignaturesChecked int64 `json:"signaturesChecked"`
	// SignaturesFailed: attestations known not to verify, from the ingest
	// check plus re-check failures of records that had passed it.
	SignaturesFailed int64       `json:"signaturesFailed"`
	Unfinalized      int64       `json:"unfinalized"`
	Recheck          Recheck     `json:"recheck"`
	Log              LogCoverage `json:"log"`
}

// LogCoverage counts the period's attestations in the transparency log.
type LogCoverage struct {
	// InLog: finalized attestations with a leaf in the log.
	InLog int64 `json:"inLog"`
	// AwaitingAppend: finalized attestations not appended yet. (Those not
	// finalized are integrity.unfinalized: they are never logged before.)
	AwaitingAppend int64 `json:"awaitingAppend"`
}

// LogPosition says whether one attestation is in the transparency log and
// at which leaf index (null when it is not).
type LogPosition struct {
	PDA      string  `json:"pda"`
	InLog    bool    `json:"inLog"`
	LogIndex *int64  `json:"logIndex"`
	Proof    *string `json:"proof"` // the path of its C2SP tlog-proof (ProofPath)
}

// Recheck is the signature re-verification done while building the report.
type Recheck struct {
	Checked int `json:"checked"` // the newest attestations of the period, up to thresholds.recheckNewest
	Failed  int `json:"failed"`
}

// Anomaly is one finding.
type Anomaly struct {
	Kind   string            `json:"kind"`
	At     attestation.Time  `json:"at"`
	Until  *attestation.Time `json:"until"`
	Count  int64             `json:"count"`
	PDAs   []string          `json:"pdas"`
	Detail string            `json:"detail"`
	// Log is, for each of PDAs in order, its place in the transparency log.
	Log []LogPosition `json:"log"`
}

// parseReportQuery reads a forensic-report request: the agent and the range.
func parseReportQuery(c *fiber.Ctx) (string, store.Range, error) {
	id, err := httpapi.ParseAddress("agentId", c.Params("agentId"))
	if err != nil {
		return "", store.Range{}, err
	}
	p, err := httpapi.QueryParams(c, "from", "to")
	if err != nil {
		return "", store.Range{}, err
	}
	r, err := httpapi.ParseRange(p)
	return id, r, err
}

// forensicReport answers GET /premium/forensic-report/:agentId.
func (h *Handler) forensicReport(c *fiber.Ctx) error {
	id, r, err := parseReportQuery(c)
	if err != nil {
		return err
	}
	key := cache.NewKey("forensic-report").String(id).Range(r).String(h.rulesKey).Key()
	// The cached bytes are answered as they are: a cached report keeps its
	// generatedAt and reportHash, and still verifies.
	v, _, err := h.cache.GetValue(c.UserContext(), key, func(ctx context.Context) ([]byte, bool, error) {
		start := time.Now()
		rep, err := h.BuildReport(ctx, id, r)
		if err != nil {
			return nil, false, httpapi.LoadError(err)
		}
		h.log.Debug("forensic report built", "agent", id, "attestations", rep.Summary.Totals.Attestations,
			"duration_ms", time.Since(start).Milliseconds())
		b, err := httpapi.Marshal(struct {
			Data *Report `json:"data"`
		}{rep})
		if err != nil {
			return nil, false, fmt.Errorf("encode forensic report: %w", err)
		}
		return b, false, nil
	})
	if errors.Is(err, cache.ErrNotFound) {
		return apierror.NotFound(apierror.CodeAgentNotFound, "no agent with pda %s", id)
	}
	if err != nil {
		return err
	}
	return httpapi.SendValue(c, v)
}

// BuildReport computes the report of agent pda over r and seals it with
// its hash. store.ErrNotFound when the agent is unknown.
func (h *Handler) BuildReport(ctx context.Context, pda string, r store.Range) (*Report, error) {
	now := h.now()
	var agent attestation.Agent
	var d store.ForensicData
	var newest []store.VerifyRow
	var verified []bool
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		// Re-verify the newest signatures while Postgres aggregates.
		var err error
		newest, err = h.store.NewestForRecheck(gctx, pda, r, h.rules.RecheckNewest)
		if err == nil {
			verified = h.verifier.checkAll(newest)
		}
		return err
	})
	g.Go(func() error {
		var err error
		agent, err = h.store.GetAgent(gctx, pda, now)
		return err
	})
	g.Go(func() error {
		var err error
		d, err = h.store.Forensic(gctx, store.ForensicQuery{
			AgentPDA: pda, Range: r,
			BurstPerMinute: h.rules.BurstPerMinute, LongGap: time.Duration(h.rules.LongGapSeconds) * time.Second,
			MaxPerKind: h.rules.MaxAnomaliesPerKind, ExamplePDAs: 10,
		})
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	rep := h.assemble(agent, d, newest, verified, r, now)
	if err := h.logPositions(ctx, rep); err != nil {
		return nil, err
	}
	if err := Seal(rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// Seal sets rep.ReportHash to the hex SHA-256 of the RFC 8785 canonical
// JSON of rep without reportHash.
func Seal(rep *Report) error {
	rep.ReportHash = ""
	sum, err := Hash(rep)
	if err != nil {
		return err
	}
	rep.ReportHash = sum
	return nil
}

// Hash returns the hex SHA-256 of the canonical JSON of v (RFC 8785).
func Hash(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode report for hashing: %w", err)
	}
	canon, err := jcs.Transform(b)
	if err != nil {
		return "", fmt.Errorf("canonicalise report: %w", err)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// assemble shapes the aggregates into the report (no hash yet).
// newest are the re-checked rows and verified their results.
func (h *Handler) assemble(agent attestation.Agent, d store.ForensicData, newest []store.VerifyRow, verified []bool, r store.Range, now time.Time) *Report {
	rep := &Report{
		Agent:         agent,
		Period:        Period{From: attestation.OptTime(r.From), To: attestation.OptTime(r.To)},
		Thresholds:    h.rules,
		GeneratedAt:   attestation.At(now),
		PolicyHistory: agent.Policies.History,
		Summary:       summarize(d),
		Timeline:      timeline(d),
	}
	if rep.PolicyHistory == nil {
		rep.PolicyHistory = []attestation.PolicyChange{}
	}
	var mismatched []store.VerifyRow
	rep.Integrity, mismatched = integrity(d, newest, verified)
	rep.Summary.AnomalyCounts = map[string]int64{KindBurst: d.TotalBursts, KindLongGap: d.TotalGaps,
		KindAfterRevocation: d.TotalAfterRevocation, KindDuplicateHash: d.TotalDuplicates, KindInvalidSignature: rep.Integrity.SignaturesFailed}
	rep.Anomalies = h.anomalies(agent, d, mismatched)
	return rep
}

// summarize counts the period's attestations (the anomaly counts are
// assemble's).
func summarize(d store.ForensicData) Summary {
	s := Summary{
		Totals:     Totals{Attestations: d.Total, Finalized: d.Finalized, Unfinalized: d.Total - d.Finalized, PrivacyMode: d.Privacy},
		ByType:     store.NewByType(),
		FirstAt:    attestation.OptTime(d.First),
		LastAt:     attestation.OptTime(d.Last),
		ActiveDays: len(d.Days),
	}
	for t, n := range d.ByType {
		s.ByType[t.String()] = n
	}
	return s
}

// timeline is the period's active days, each with its counts by type.
func timeline(d store.ForensicData) []TimelineDay {
	days := make([]TimelineDay, 0, len(d.Days))
	byDay := map[time.Time]int{}
	for _, day := range d.Days {
		byDay[day.Day] = len(days)
		days = append(days, TimelineDay{Day: day.Day.Format(time.DateOnly), Count: day.N, ByType: store.NewByType()})
	}
	for _, dt := range d.DayTypes {
		if i, ok := byDay[dt.Day]; ok {
			days[i].ByType[dt.ActionType.String()] = dt.N
		}
	}
	return days
}

// integrity says how far the period's records can be trusted: the ingest
// checks, the newest signatures re-verified from the stored bytes
// (newest, with verified their results) and the log's coverage. It also
// returns the re-checked rows that passed at ingest and fail now: their
// records changed.
func integrity(d store.ForensicData, newest []store.VerifyRow, verified []bool) (Integrity, []store.VerifyRow) {
	var mismatched []store.VerifyRow
	failed := 0
	for i, ok := range verified {
		if !ok {
			failed++
			if newest[i].SignatureValid {
				mismatched = append(mismatched, newest[i])
			}
		}
	}
	return Integrity{
		SignaturesChecked: d.Total,
		SignaturesFailed:  d.SignatureFailed + int64(len(mismatched)),
		Unfinalized:       d.Total - d.Finalized,
		Recheck:           Recheck{Checked: len(newest), Failed: failed},
		Log:               LogCoverage{InLog: max(d.Finalized-d.LogAwaiting, 0), AwaitingAppend: d.LogAwaiting},
	}, mismatched
}

// anomalies lists the findings (each kind up to the rules' limit, as the
// store read them), oldest first: bursts, long gaps, attestations after
// the agent's revocation, repeated action hashes, and signatures that do
// not verify, at ingest or now (mismatched).
func (h *Handler) anomalies(agent attestation.Agent, d store.ForensicData, mismatched []store.VerifyRow) []Anomaly {
	out := []Anomaly{}
	add := func(a Anomaly) { out = append(out, a) }
	for _, b := range d.Bursts {
		until := attestation.At(b.Until)
		add(Anomaly{Kind: KindBurst, At: attestation.At(b.At), Until: &until, Count: b.N, PDAs: []string{},
			Detail: fmt.Sprintf("%d attestations in the minute from %s (threshold %d per minute)", b.N, attestation.At(b.At), h.rules.BurstPerMinute)})
	}
	for _, gp := range d.Gaps {
		until := attestation.At(gp.Until)
		add(Anomaly{Kind: KindLongGap, At: attestation.At(gp.At), Until: &until, Count: 0, PDAs: []string{},
			Detail: fmt.Sprintf("no attestation for %s between %s and %s (threshold %s)", gp.Until.Sub(gp.At).Round(time.Second),
				attestation.At(gp.At), until, time.Duration(h.rules.LongGapSeconds)*time.Second)})
	}
	revokedAt := "the revocation"
	if agent.RevokedAt != nil {
		revokedAt = agent.RevokedAt.String()
	}
	for _, p := range d.AfterRevocation {
		add(Anomaly{Kind: KindAfterRevocation, At: attestation.At(p.At), Count: 1, PDAs: []string{p.PDA},
			Detail: fmt.Sprintf("attestation %s at %s, after the agent was revoked at %s", p.PDA, attestation.At(p.At), revokedAt)})
	}
	for _, dup := range d.Duplicates {
		until := attestation.At(dup.Last)
		pdas := dup.PDAs
		if pdas == nil {
			pdas = []string{}
		}
		add(Anomaly{Kind: KindDuplicateHash, At: attestation.At(dup.First), Until: &until, Count: dup.N, PDAs: pdas,
			Detail: fmt.Sprintf("action hash %x attested %d times between %s and %s", dup.Hash, dup.N, attestation.At(dup.First), until)})
	}
	out = append(out, h.invalidSignatures(d, mismatched)...)
	slices.SortStableFunc(out, func(a, b Anomaly) int {
		if c := a.At.Compare(b.At.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Kind, b.Kind)
	})
	return out
}

// invalidSignatures are the signatures that did not verify at ingest,
// then those that did but fail now (mismatched), up to the rules' limit.
func (h *Handler) invalidSignatures(d store.ForensicData, mismatched []store.VerifyRow) []Anomaly {
	var out []Anomaly
	seen := map[string]bool{}
	for _, p := range d.InvalidSignatures {
		seen[p.PDA] = true
		out = append(out, Anomaly{Kind: KindInvalidSignature, At: attestation.At(p.At), Count: 1, PDAs: []string{p.PDA},
			Detail: fmt.Sprintf("the signature of %s did not verify when indexed", p.PDA)})
	}
	for _, r := range mismatched {
		if seen[r.PDA] || len(out) >= h.rules.MaxAnomaliesPerKind {
			continue
		}
		out = append(out, Anomaly{Kind: KindInvalidSignature, At: attestation.At(r.Timestamp), Count: 1, PDAs: []string{r.PDA},
			Detail: fmt.Sprintf("the signature of %s verified when indexed but does not verify against the stored record now (changed after indexing?)", r.PDA)})
	}
	return out
}

// logPositions fills each anomaly's log positions, in one query for every
// attestation the report names.
func (h *Handler) logPositions(ctx context.Context, rep *Report) error {
	var pdas []string
	for _, a := range rep.Anomalies {
		pdas = append(pdas, a.PDAs...)
	}
	idx := map[string]int64{}
	for len(pdas) > 0 {
		n := min(len(pdas), 10000)
		m, err := h.store.LogIndexes(ctx, pdas[:n])
		if err != nil {
			return err
		}
		maps.Copy(idx, m)
		pdas = pdas[n:]
	}
	for i := range rep.Anomalies {
		a := &rep.Anomalies[i]
		a.Log = make([]LogPosition, len(a.PDAs))
		for k, pda := range a.PDAs {
			a.Log[k] = LogPosition{PDA: pda}
			if n, ok := idx[pda]; ok {
				a.Log[k].InLog, a.Log[k].LogIndex, a.Log[k].Proof = true, &n, ProofPath(pda)
			}
		}
	}
	return nil
}
