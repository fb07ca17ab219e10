// Package hostile sends a matrix of hostile requests to a running attestd
// node (every route, with hostile parameters, paths, bodies, encodings,
// methods and headers, some of it malformed HTTP) and reports every answer
// that breaks the API's promises: a 5xx, or a non-2xx outside the error
// envelope. The suite runs it against a real `attestd serve` process and
// bounds the process's peak memory while it does.
package hostile
