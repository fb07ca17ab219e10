package config

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Var documents one environment variable. Every package that reads the
// environment lists its variables as a []Var; the tables of
// docs/configuration.md are checked against those lists.
type Var struct {
	Name    string
	Default string // as docs/configuration.md shows it; "" for none
	Help    string
}

// Env reads environment variables and collects every problem, so a
// process that refuses to start names all the variables to fix at once.
// Values are trimmed; an empty value means unset, except where Lookup is
// used on the process environment.
type Env struct {
	getenv func(string) string
	lookup func(string) (string, bool)
	errs   []error
}

// NewEnv reads through getenv; nil reads the process environment.
func NewEnv(getenv func(string) string) *Env {
	if getenv == nil {
		return &Env{getenv: os.Getenv, lookup: os.LookupEnv}
	}
	return &Env{getenv: getenv, lookup: func(name string) (string, bool) {
		v := getenv(name)
		return v, v != ""
	}}
}

// Err is every problem seen so far, or nil.
func (e *Env) Err() error { return errors.Join(e.errs...) }

// Fail records a problem with name's value.
func (e *Env) Fail(name, format string, args ...any) {
	e.errs = append(e.errs, fmt.Errorf("%s: "+format, append([]any{name}, args...)...))
}

// String is name's value, or def when unset.
func (e *Env) String(name, def string) string {
	if v := strings.TrimSpace(e.getenv(name)); v != "" {
		return v
	}
	return def
}

// Lookup is name's value and whether it is set; with the process
// environment, set to the empty string counts as set.
func (e *Env) Lookup(name string) (string, bool) {
	v, ok := e.lookup(name)
	return strings.TrimSpace(v), ok
}

// Int is name's value as a whole number in [lo, hi], or def when unset.
func (e *Env) Int(name string, def, lo, hi int) int {
	v := e.String(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		e.Fail(name, "want a whole number from %d to %d, got %q", lo, hi, v)
		return def
	}
	return n
}

// Duration is name's value as a Go duration in [lo, hi], or def when unset.
func (e *Env) Duration(name string, def, lo, hi time.Duration) time.Duration {
	v := e.String(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < lo || d > hi {
		e.Fail(name, "want a Go duration from %s to %s (such as %s), got %q", lo, hi, example(def, lo), v)
		return def
	}
	return d
}

func example(def, lo time.Duration) time.Duration {
	if def > 0 {
		return def
	}
	return lo
}

// Switch reads a two-valued variable and reports whether it holds alt
// rather than def, its default.
func (e *Env) Switch(name, def, alt string) bool {
	switch v := e.String(name, def); v {
	case def:
		return false
	case alt:
		return true
	default:
		e.Fail(name, "want %s or %s, got %q", def, alt, v)
		return false
	}
}

// OneOf reads a variable whose value must be one of allowed (def when unset).
func (e *Env) OneOf(name, def string, allowed ...string) string {
	v := e.String(name, def)
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	e.Fail(name, "want one of %s, got %q", strings.Join(allowed, ", "), v)
	return def
}
