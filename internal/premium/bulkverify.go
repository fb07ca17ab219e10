package premium

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/jsonbody"
	"github.com/attestd/attestd/internal/store"
	"github.com/gofiber/fiber/v2"
)

// Limits of POST /premium/bulk-verify.
const (
	MaxBulkIDs  = 1000
	MaxBulkBody = 256 << 10 // bytes
)

// Reasons a bulk-verify answer is not valid.
const (
	ReasonMalformedID      = "malformed_id"
	ReasonNotFound         = "not_found"
	ReasonSignatureInvalid = "signature_invalid"
	ReasonNotFinalized     = "not_finalized"
)

// VerifyResult is the answer for one requested id.
type VerifyResult struct {
	ID         string                  `json:"id"`
	Valid      bool                    `json:"valid"`
	Reason     *string                 `json:"reason"`
	ActionType *attestation.ActionType `json:"actionType"`
	Timestamp  *attestation.Time       `json:"timestamp"`
	CheckedAt  attestation.Time        `json:"checkedAt"`
	// InLog says whether the attestation has a leaf in the transparency
	// log; LogIndex is its index (null without one). A leaf is provable
	// with GET /attestations/{id}/proof.
	InLog    bool   `json:"inLog"`
	LogIndex *int64 `json:"logIndex"`
	// Proof is the path of its offline proof (a C2SP tlog-proof), null
	// without a leaf: a link, since a proof is against the newest
	// checkpoint and a thousand would be megabytes.
	Proof *string `json:"proof"`
}

// ProofPath is where the C2SP tlog-proof of attestation pda is served.
func ProofPath(pda string) *string {
	p := "/api/v1/attestations/" + pda + "/proof?format=tlog-proof"
	return &p
}

// VerifySummary counts the answers. Invalid includes NotFound, which counts
// ids the index does not hold (not_found and malformed_id).
type VerifySummary struct {
	Total    int `json:"total"`
	Valid    int `json:"valid"`
	Invalid  int `json:"invalid"`
	NotFound int `json:"notFound"`
}

type verifyBody struct {
	Data    []VerifyResult `json:"data"`
	Summary VerifySummary  `json:"summary"`
}

// ParseBulkRequest reads a bulk-verify body: a JSON object whose only
// member is "ids", an array of 1 to MaxBulkIDs strings. Malformed JSON, a
// different shape, or an element that is not a string is 400 INVALID_PARAM;
// an empty or too long array is 422 BATCH_LIMIT_EXCEEDED. The strings are
// not validated here: a string that is not an attestation id is answered
// per position as malformed_id.
func ParseBulkRequest(body []byte) ([]string, error) {
	var fields map[string]json.RawMessage
	if err := jsonbody.Decode(body, &fields); err != nil || fields == nil {
		return nil, jsonbody.Refusal(err, `the body must be a JSON object {"ids": [...]} listing attestation pdas`)
	}
	for name := range fields {
		if name != "ids" {
			return nil, apierror.Invalid("unknown field %q; the body has one field, ids", name)
		}
	}
	raw, ok := fields["ids"]
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if !ok || len(raw) == 0 || raw[0] != '[' {
		return nil, apierror.Invalid("ids must be an array of attestation pdas (strings)")
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, apierror.Invalid("ids must be an array of attestation pdas (strings)")
	}
	// Shape first (every element a string: 400), then size (422).
	ids := make([]string, len(elems))
	for i, e := range elems {
		e = bytes.TrimLeft(e, " \t\r\n")
		if len(e) == 0 || e[0] != '"' {
			return nil, apierror.Invalid("ids[%d] must be a string", i)
		}
		if err := json.Unmarshal(e, &ids[i]); err != nil {
			return nil, apierror.Invalid("ids[%d] must be a string", i)
		}
	}
	if len(ids) == 0 || len(ids) > MaxBulkIDs {
		return nil, apierror.New(http.StatusUnprocessableEntity, apierror.CodeBatchLimitExceeded,
			"ids must hold 1 to %d attestation pdas, got %d", MaxBulkIDs, len(ids))
	}
	return ids, nil
}

// canonicalPDA returns id when it is a base58 address in canonical form.
func canonicalPDA(id string) bool {
	pk, err := attestation.ParseAddress(id)
	return err == nil && pk.String() == id
}

// parseBulkVerify reads a bulk-verify request: no query parameters, a
// JSON body of ids (fresh strings, not Fiber buffers).
func parseBulkVerify(c *fiber.Ctx) ([]string, error) {
	if _, err := httpapi.QueryParams(c); err != nil {
		return nil, err
	}
	body, err := httpapi.Body(c, MaxBulkBody)
	if err != nil {
		return nil, err
	}
	if err := httpapi.RequireJSON(c.Get(fiber.HeaderContentType), `{"ids": [...]}`); err != nil {
		return nil, err
	}
	return ParseBulkRequest(body)
}

func (h *Handler) bulkVerify(c *fiber.Ctx) error {
	ids, err := parseBulkVerify(c)
	if err != nil {
		return err
	}
	res, err := h.verify(c.UserContext(), ids)
	if err != nil {
		return err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return httpapi.SendJSON(c, b)
}

// verify answers ids in order with one database round trip.
func (h *Handler) verify(ctx context.Context, ids []string) (verifyBody, error) {
	checkedAt := attestation.At(h.now())
	wellFormed := make(map[string]bool, len(ids))
	var lookup []string
	for _, id := range ids {
		if _, seen := wellFormed[id]; seen {
			continue
		}
		ok := canonicalPDA(id)
		wellFormed[id] = ok
		if ok {
			lookup = append(lookup, id)
		}
	}
	// Not cached, but as fresh as what this node serves: a read replica is
	// used only once it has replayed the node's current epoch.
	ctx = store.AtLeast(ctx, h.cache.Epoch())
	found, sigOK, err := h.verifier.stream(func(emit func(store.VerifyRow)) error {
		return h.store.EachVerifyRow(ctx, lookup, emit)
	})
	if err != nil {
		return verifyBody{}, httpapi.StoreError(err)
	}
	out := verifyBody{Data: make([]VerifyResult, len(ids)), Summary: VerifySummary{Total: len(ids)}}
	for i, id := range ids {
		r := VerifyResult{ID: id, CheckedAt: checkedAt}
		row, ok := found[id]
		var reason string
		switch {
		case !wellFormed[id]:
			reason = ReasonMalformedID
		case !ok:
			reason = ReasonNotFound
		case !sigOK[id]:
			reason = ReasonSignatureInvalid
		case !row.Finalized:
			reason = ReasonNotFinalized
		}
		if ok {
			typ, ts := row.ActionType, attestation.At(row.Timestamp)
			r.ActionType, r.Timestamp = &typ, &ts
			r.InLog, r.LogIndex = row.LogIndex != nil, row.LogIndex
			if r.InLog {
				r.Proof = ProofPath(r.ID)
			}
		}
		if reason == "" {
			r.Valid = true
			out.Summary.Valid++
		} else {
			r.Reason = &reason
			out.Summary.Invalid++
			if reason == ReasonNotFound || reason == ReasonMalformedID {
				out.Summary.NotFound++
			}
		}
		out.Data[i] = r
	}
	return out, nil
}
