package node

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ServeInternal serves the internal listener at addr ("": none) until ctx
// ends: /metrics from reg, /health from health (nil: none; the index and
// worker processes, whose probes ask it; an API node answers /health on
// its public listener) and the profiler when withPprof (ATTESTD_PPROF=on).
func ServeInternal(ctx context.Context, addr string, reg *prometheus.Registry, log *slog.Logger, withPprof bool, health http.Handler) {
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	if health != nil {
		mux.Handle("/health", health)
	}
	if withPprof { // internal listener only, never the public one, and opt-in
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener failed", "addr", addr, "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("metrics listening", "addr", addr, "pprof", withPprof)
}
