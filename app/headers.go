package app

// Response header names in the form fasthttp keeps them (each word
// capitalised, the rest lower case), for ResponseHeader.SetCanonical: a
// name set that way is neither copied nor normalised again on every
// answer. headers_test.go holds them to fasthttp's own normalisation.
var (
	headerCacheControl = []byte("Cache-Control")
	headerVary         = []byte("Vary")
	headerETag         = []byte("Etag")
	headerRequestID    = []byte("X-Request-Id")

	acceptEncoding = []byte("Accept-Encoding") // the Vary of every public answer
)
