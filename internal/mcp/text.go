package mcp

import (
	"fmt"
	"strings"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/client"
)

// The short readable text beside each structured answer.

// maxLines bounds the per-record lines of a text answer; the structured
// answer always holds every record.
const maxLines = 25

func byTypeText(m client.ByType) string {
	parts := make([]string, 0, len(m))
	for _, n := range attestation.ActionTypeNames() {
		if v, ok := m[n]; ok {
			parts = append(parts, fmt.Sprintf("%s %d", n, v))
		}
	}
	return strings.Join(parts, ", ")
}

func timeText(t *attestation.Time) string {
	if t == nil {
		return "never"
	}
	return t.String()
}

func attestationLine(a *client.Attestation) string {
	return fmt.Sprintf("%s  %-15s  pda %s  agent %s  hash %s  %s", a.Timestamp, a.ActionType, a.PDA, a.AgentPDA, a.ActionHash, a.Commitment)
}

func attestationLines(b *strings.Builder, as []client.Attestation) {
	for i := range as {
		if i == maxLines {
			fmt.Fprintf(b, "... and %d more (see the structured result)\n", len(as)-maxLines)
			break
		}
		b.WriteString(attestationLine(&as[i]) + "\n")
	}
}

func statsText(o StatsOutput) string {
	s := o.Stats
	var b strings.Builder
	fmt.Fprintf(&b, "%d agents, %d attestations (%d in the last 24h), indexed up to slot %d.\nBy type: %s.",
		s.Agents, s.Attestations, s.Last24h, s.IndexedSlot, byTypeText(s.ByType))
	if h := o.Health; h != nil {
		fmt.Fprintf(&b, "\nService %s, version %s; indexer synced: %v (lag %d slots).", h.Status, h.Version, h.Indexer.Synced, h.Indexer.LagSlots)
		if len(h.Reasons) > 0 {
			fmt.Fprintf(&b, " Why: %s.", strings.Join(h.Reasons, "; "))
		}
	}
	return b.String()
}

func listText(p *client.AttestationPage) string {
	var b strings.Builder
	pg := p.Pagination
	if len(p.Data) == 0 {
		fmt.Fprintf(&b, "No attestations on this page (%d match the filters).", pg.Total)
		return b.String()
	}
	fmt.Fprintf(&b, "%d attestations of %d matching, newest first (limit %d, offset %d).\n", len(p.Data), pg.Total, pg.Limit, pg.Offset)
	attestationLines(&b, p.Data)
	if pg.NextCursor != "" {
		fmt.Fprintf(&b, "Next page: cursor=%s", pg.NextCursor)
	} else {
		b.WriteString("This is the last page.")
	}
	return b.String()
}

func attestationText(a *client.Attestation) string {
	return fmt.Sprintf("Attestation %s\n  agent %s (Ed25519 key %s)\n  action %s, hash %s\n  at %s, slot %d, %s, tx %s\n  privacy mode %v, agent signature %s",
		a.PDA, a.AgentPDA, a.AgentID, a.ActionType, a.ActionHash, a.Timestamp, a.Slot, a.Commitment, a.TxSignature, a.PrivacyMode, a.AgentSignature)
}

func agentText(a *client.Agent) string {
	state := "active"
	if a.Revoked {
		state = "revoked at " + timeText(a.RevokedAt)
	}
	m := a.Metrics
	return fmt.Sprintf("Agent %s (%s)\n  operator %s, Ed25519 key %s, registered %s\n  %d attestations (first %s, last %s, %d in the last 24h)\n  policy root %s (policy history: %d)",
		a.PDA, state, a.Operator, a.AgentID, a.RegisteredAt, m.AttestationCount, timeText(m.FirstAttestationAt),
		timeText(m.LastAttestationAt), m.Last24h, a.PolicyRoot, len(a.Policies.History))
}

func agentStatsText(s *client.AgentStats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Agent %s: %d attestations (%d in the last 24h, %d in 7 days), first %s, last %s.\nBy type: %s.\n",
		s.AgentPDA, s.TotalAttestations, s.Last24h, s.Last7d, timeText(s.FirstAttestationAt), timeText(s.LastAttestationAt), byTypeText(s.ByType))
	if len(s.RecentAttestations) > 0 {
		b.WriteString("Most recent:\n")
		attestationLines(&b, s.RecentAttestations)
	}
	return strings.TrimRight(b.String(), "\n")
}

func verifyText(o *VerifyOutput) string {
	var b strings.Builder
	switch {
	case o.Result == NotAttested:
		fmt.Fprintf(&b, "NOT_ATTESTED: no indexed attestation has this payload's hash (SHA-256 of its bytes %s", o.PayloadHash)
		if o.CanonicalHash != "" && o.CanonicalHash != o.PayloadHash {
			fmt.Fprintf(&b, ", of its RFC 8785 canonical JSON %s", o.CanonicalHash)
		}
		b.WriteString(").")
		return b.String()
	case o.ExpectedFrom == "search":
		form := "the payload's UTF-8 bytes"
		if o.MatchedForm == FormCanonical {
			form = "the payload's RFC 8785 canonical JSON"
		}
		fmt.Fprintf(&b, "VERIFIED: %d indexed attestation(s) commit to %s (SHA-256 %s)", o.Matched, form, o.ExpectedHash)
		if int64(len(o.Matches)) < o.Matched {
			fmt.Fprintf(&b, "; the newest %d", len(o.Matches))
		}
		b.WriteString(":")
		for _, a := range o.Matches {
			sig := "agent signature valid"
			if !a.SignatureValid {
				sig = "WARNING: agent signature does NOT verify"
			}
			fmt.Fprintf(&b, "\n- %s by agent %s at %s (%s, %s; transaction %s; %s)", a.PDA, a.AgentPDA, a.Timestamp, a.ActionType, a.Commitment, a.TxSignature, sig)
		}
		return b.String()
	}
	if o.Result == Verified {
		form := "the payload's UTF-8 bytes"
		if o.MatchedForm == FormCanonical {
			form = "the payload's RFC 8785 canonical JSON"
		}
		fmt.Fprintf(&b, "VERIFIED: the SHA-256 of %s is %s, equal to the %s.", form, o.ExpectedHash, expectedFromText(o))
	} else {
		fmt.Fprintf(&b, "MISMATCH: the %s is %s; the payload hashes to %s", expectedFromText(o), o.ExpectedHash, o.PayloadHash)
		if o.CanonicalHash != "" {
			fmt.Fprintf(&b, " (RFC 8785 canonical JSON: %s)", o.CanonicalHash)
		}
		b.WriteString(".")
	}
	if a := o.Attestation; a != nil {
		if a.SignatureValid {
			fmt.Fprintf(&b, "\nThe agent's Ed25519 signature over the attested hash is valid (key %s, attestation %s, %s).", a.AgentID, a.PDA, a.Commitment)
		} else {
			fmt.Fprintf(&b, "\nWARNING: the agent's Ed25519 signature over the attested hash does NOT verify (key %s, attestation %s).", a.AgentID, a.PDA)
		}
	}
	return b.String()
}

func expectedFromText(o *VerifyOutput) string {
	if o.ExpectedFrom == "attestation" && o.Attestation != nil {
		return "actionHash of attestation " + o.Attestation.PDA
	}
	return "expected hash"
}

func fullHistoryText(agent string, h *client.FullHistory) string {
	var b strings.Builder
	pg := h.Pagination
	fmt.Fprintf(&b, "Full history of agent %s: %d attestations of %d, newest first (offset %d).\n", agent, len(h.Data), pg.Total, pg.Offset)
	attestationLines(&b, h.Data)
	if pg.NextCursor != "" {
		fmt.Fprintf(&b, "Next page: cursor=%s", pg.NextCursor)
	}
	return strings.TrimRight(b.String(), "\n")
}

func forensicText(agent string, o *ForensicOutput) string {
	r := &o.Report
	sm := r.Summary
	var b strings.Builder
	fmt.Fprintf(&b, "Forensic report on agent %s, period %s to %s, generated %s.\n", agent, periodBound(r.Period.From, "open"),
		periodBound(r.Period.To, "open"), r.GeneratedAt)
	fmt.Fprintf(&b, "%d attestations (%d finalized, %d unfinalized, %d private) on %d active days, first %s, last %s.\nBy type: %s.\n",
		sm.Totals.Attestations, sm.Totals.Finalized, sm.Totals.Unfinalized, sm.Totals.PrivacyMode, sm.ActiveDays,
		timeText(sm.FirstAt), timeText(sm.LastAt), byTypeText(sm.ByType))
	in := r.Integrity
	fmt.Fprintf(&b, "Integrity: %d signatures checked, %d failed; newest %d re-checked now, %d failed.\n",
		in.SignaturesChecked, in.SignaturesFailed, in.Recheck.Checked, in.Recheck.Failed)
	var total int64
	var kinds []string
	for _, k := range []string{client.AnomalyBurst, client.AnomalyLongGap, client.AnomalyAfterRevocation, client.AnomalyDuplicateHash,
		client.AnomalyInvalidSignature} {
		if n := sm.AnomalyCounts[k]; n > 0 {
			total += n
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
	}
	if total == 0 {
		total = int64(len(r.Anomalies))
	}
	fmt.Fprintf(&b, "Anomalies: %d", total)
	if len(kinds) > 0 {
		b.WriteString(" (" + strings.Join(kinds, ", ") + ")")
	}
	for i, a := range r.Anomalies {
		if i == maxLines {
			b.WriteString("\n  ... (see the structured result)")
			break
		}
		fmt.Fprintf(&b, "\n  %s at %s: %s", a.Kind, a.At, a.Detail)
	}
	if o.ReportHashVerified {
		fmt.Fprintf(&b, "\nreportHash %s verified (SHA-256 of the report's RFC 8785 canonical JSON).", r.ReportHash)
	} else {
		fmt.Fprintf(&b, "\nWARNING: reportHash %s does not match the report (recomputed %s).", r.ReportHash, o.RecomputedHash)
	}
	return b.String()
}

func periodBound(t *attestation.Time, open string) string {
	if t == nil {
		return open
	}
	return t.String()
}

func bulkText(r *client.BulkVerifyResult) string {
	var b strings.Builder
	s := r.Summary
	fmt.Fprintf(&b, "Checked %d attestations: %d valid, %d invalid (%d of them not found).", s.Total, s.Valid, s.Invalid, s.NotFound)
	n := 0
	for _, v := range r.Data {
		if v.Valid {
			continue
		}
		if n == maxLines {
			b.WriteString("\n  ... (see the structured result)")
			break
		}
		fmt.Fprintf(&b, "\n  %s: %s", v.ID, v.Reason)
		n++
	}
	return b.String()
}
