package httpcache

import "github.com/gofiber/fiber/v2"

// Surrogate-key headers: the same keys, in the two forms CDNs read.
const (
	HeaderSurrogateKey = "Surrogate-Key" // space-separated (Fastly, Varnish xkey)
	HeaderCacheTag     = "Cache-Tag"     // comma-separated (Cloudflare)
)

// Surrogate keys of public answers. An answer carries one general key
// (what kind of answer it is) and at most one identifying key (which
// agent or attestation it is about).
const (
	KeyLists     = "lists"     // GET /attestations, any filter
	KeyStats     = "stats"     // GET /stats
	KeyAgents    = "agents"    // GET /agents/:id and /agents/:id/stats
	KeyConfirmed = "confirmed" // a confirmed (not yet finalized) attestation
	KeyOpenAPI   = "openapi"   // GET /openapi.json

	// PrefixAgent + pda: every answer about one agent (its detail, its
	// stats, lists filtered by it).
	PrefixAgent = "agent-"
	// PrefixAttestation + pda: one attestation.
	PrefixAttestation = "attestation-"
)

// EpochKeys are the keys of every answer a new index epoch can change (a
// new attestation, a finalization, a fork): what the purge hook purges.
// Finalized attestations and the document are not among them.
var EpochKeys = []string{KeyLists, KeyStats, KeyAgents, KeyConfirmed}

// maxKeysLen bounds the two headers' values: the longest general key, a
// separator, and an identifying prefix with a 44-character address.
const maxKeysLen = 96

// SetKeys writes Surrogate-Key and Cache-Tag: general (when not empty),
// then prefix+id (when id is not empty). id is an address the route
// validated (at most 44 base58 characters); one that would not fit is
// left out rather than written.
func SetKeys(c *fiber.Ctx, general, prefix, id string) {
	var buf [maxKeysLen]byte
	b := append(buf[:0], general...)
	sep := -1
	if id != "" && len(general)+1+len(prefix)+len(id) <= maxKeysLen {
		if len(b) > 0 {
			sep = len(b)
			b = append(b, ' ')
		}
		b = append(b, prefix...)
		b = append(b, id...)
	}
	if len(b) == 0 {
		return
	}
	h := &c.Response().Header
	h.SetCanonical(surrogateKey, b)
	if sep >= 0 {
		b[sep] = ','
	}
	h.SetCanonical(cacheTag, b)
}

// The two names as fasthttp keeps them (both already capitalised word by
// word), for SetCanonical: not copied and normalised on every answer.
var surrogateKey, cacheTag = []byte(HeaderSurrogateKey), []byte(HeaderCacheTag)
