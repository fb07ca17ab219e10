package app

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/internal/metric"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
)

const requestIDHeader = "X-Request-ID"

// front is the first handler of every request: it gives the request its
// id, then runs the rest under the panic guard and the metrics, once
// checkFraming let the request through. One
// handler rather than three: each layer is another pass through Fiber's
// router, on every request.
func (a *API) front(c *fiber.Ctx) (err error) {
	a.requestID(c)
	defer func() {
		if r := recover(); r != nil {
			err = a.panicked(c, r)
		}
	}()
	return a.observe(c)
}

// requestID honours a sane incoming X-Request-ID or makes one, and echoes
// it. The response header is where the id lives (requestIDOf reads it
// back): setting it copies the bytes, so nothing is allocated here.
func (a *API) requestID(c *fiber.Ctx) {
	h := &c.Response().Header
	if id := c.Request().Header.Peek(requestIDHeader); validRequestID(id) {
		h.SetCanonical(headerRequestID, id)
	} else {
		var buf [32]byte
		h.SetCanonical(headerRequestID, appendRequestID(buf[:0]))
	}
}

func (a *API) setRequestID(c *fiber.Ctx, id string) { c.Set(requestIDHeader, id) }

// Request ids: a random per-process prefix and a counter, unique across
// nodes and cheap on the hot path.
var (
	requestIDPrefix = func() string {
		var b [6]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:]) + "-"
	}()
	requestCounter atomic.Uint64
)

func appendRequestID(b []byte) []byte {
	return strconv.AppendUint(append(b, requestIDPrefix...), requestCounter.Add(1), 36)
}

func newRequestID() string { return string(appendRequestID(nil)) }

func validRequestID(s []byte) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// requestIDOf is the request's id (a copy), "" before requestID ran.
func requestIDOf(c *fiber.Ctx) string {
	return string(c.Response().Header.Peek(requestIDHeader))
}

// panicked logs a recovered panic and answers a 500 without internals.
func (a *API) panicked(c *fiber.Ctx, r any) error {
	a.log.Error("panic serving request", "request_id", requestIDOf(c), "path", c.Path(),
		"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	return apierror.New(http.StatusInternalServerError, apierror.CodeInternal,
		"internal error; quote request id %s", requestIDOf(c))
}

type httpMetrics struct {
	duration     *prometheus.HistogramVec
	observers    sync.Map // observerKey → prometheus.Observer: duration's children
	inflight     *inflightGauge
	refusedConns prometheus.Counter
}

// inflightGauge is a gauge kept as an integer: one atomic add per change,
// where a prometheus.Gauge compares-and-swaps a float (and retries when
// the other core changed it meanwhile), twice per request.
type inflightGauge struct {
	n    atomic.Int64
	desc *prometheus.Desc
}

func newInflightGauge() *inflightGauge {
	return &inflightGauge{desc: prometheus.NewDesc("attestd_http_requests_in_flight", "Requests being served.", nil, nil)}
}

func (g *inflightGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *inflightGauge) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(g.n.Load()))
}

// observerKey names one child of the duration histogram. Its strings are
// constants (route patterns from the route table, method and status
// labels), so the set is bounded and safe to keep.
type observerKey struct{ route, method, class string }

// observer is duration.WithLabelValues, remembered: the lookup by labels
// hashes and checks them on every call, a cost every request paid.
func (m *httpMetrics) observer(route, method, class string) prometheus.Observer {
	k := observerKey{route, method, class}
	if o, ok := m.observers.Load(k); ok {
		return o.(prometheus.Observer)
	}
	o := m.duration.WithLabelValues(route, method, class)
	m.observers.Store(k, o)
	return o
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "attestd_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern, method and status class.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "method", "status"}),
		inflight: newInflightGauge(),
		refusedConns: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_http_connections_refused_total",
			Help: "Connections refused because their client IP held the most allowed (ATTESTD_MAX_CONNS_PER_IP)."}),
	}
	m.duration, m.inflight = metric.Register(reg, m.duration), metric.Register(reg, m.inflight)
	m.refusedConns = metric.Register(reg, m.refusedConns)
	return m
}

var statusClass = [...]string{"1xx", "2xx", "3xx", "4xx", "5xx"}

// observe records latency per route and writes the access log.
func (a *API) observe(c *fiber.Ctx) error {
	start := c.Context().Time() // when the request was read: fasthttp took the time already
	if start.IsZero() {         // a request the node makes of itself (package inprocess) was never read
		start = time.Now()
	}
	a.m.inflight.n.Add(1)
	defer a.m.inflight.n.Add(-1) // a panic unwinds through here too
	err := checkFraming(c)
	if err == nil {
		err = c.Next()
	}
	if err != nil {
		// Let the error handler write the response now so the status is known.
		if herr := a.fiber.ErrorHandler(c, err); herr != nil {
			_ = c.SendStatus(http.StatusInternalServerError)
		}
		err = nil
	}
	el := time.Since(start)
	status := c.Response().StatusCode()
	if status >= http.StatusBadRequest {
		uncacheable(c) // middleware answers too (429)
	}
	route := c.Route().Path // from the route table: safe to keep
	if route == "/" {       // only the middleware matched
		route = "unmatched"
	}
	cls := "5xx"
	switch i := status/100 - 1; {
	case status == http.StatusServiceUnavailable:
		// Apart from other 5xx: a store, the chain or a facilitator away
		// (or a node draining), said so and to be retried; not a defect.
		cls = "503"
	case i >= 0 && i < len(statusClass):
		cls = statusClass[i]
	}
	// Labels outlive the request: only constant strings (c.Method() points
	// into a buffer fasthttp reuses), and a bounded set of them.
	a.m.observer(route, methodLabel(c.Method()), cls).Observe(el.Seconds())
	if a.deps.AccessLogAll || status >= 500 || el > time.Second {
		a.log.Info("request", "request_id", requestIDOf(c), "method", methodOf(c), "path", c.Path(),
			"route", route, "status", strconv.Itoa(status), "duration_ms", float64(el.Microseconds())/1000, "ip", c.IP())
	}
	return err
}

// methodLabel is the method as a constant string: one of the standard
// methods, or "other".
func methodLabel(m string) string {
	for _, s := range fiber.DefaultMethods {
		if m == s {
			return s
		}
	}
	return "other"
}
