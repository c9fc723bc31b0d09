package httpapi

import (
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// healthBody answers /healthz and /readyz.
type healthBody struct {
	Status string `json:"status"`
	// NotReady lists the SKUs ("campaign/sku") not recovered or whose log
	// failed.
	NotReady []string `json:"not_ready,omitempty"`
}

// handleHealthz is GET /healthz: the process is up and serving.
func (s *Server) handleHealthz(ctx *fasthttp.RequestCtx) string {
	return write(ctx, jsonReply(fasthttp.StatusOK, outcomeOK, healthBody{Status: "ok"}))
}

// maxNotReadyListed bounds the SKUs /readyz names.
const maxNotReadyListed = 20

// handleReadyz is GET /readyz: 200 while every SKU is recovered and its log
// writable, 503 otherwise (and from the start of Shutdown).
func (s *Server) handleReadyz(ctx *fasthttp.RequestCtx) string {
	if s.draining.Load() {
		return write(ctx, jsonReply(fasthttp.StatusServiceUnavailable, reasonUnavailable, healthBody{Status: "draining"}))
	}
	var bad []string
	for _, h := range s.engine.SKUs() {
		if st := h.Stats(); st.Unavailable {
			if len(bad) < maxNotReadyListed {
				bad = append(bad, st.CampaignID+"/"+st.SKUID)
			}
		}
	}
	if len(bad) > 0 {
		return write(ctx, jsonReply(fasthttp.StatusServiceUnavailable, reasonUnavailable, healthBody{Status: "unavailable", NotReady: bad}))
	}
	return write(ctx, jsonReply(fasthttp.StatusOK, outcomeOK, healthBody{Status: "ready"}))
}

// metricsHandler serves the registry in the Prometheus formats.
func (s *Server) metricsHandler() fasthttp.RequestHandler {
	h := promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{
		ErrorLog:            promLogger{s},
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Registry:            s.cfg.Registry,
	})
	return fasthttpadaptor.NewFastHTTPHandler(h)
}

// promLogger sends promhttp's errors to slog.
type promLogger struct{ s *Server }

// Println implements promhttp.Logger.
func (l promLogger) Println(v ...any) {
	l.s.log.Error("metrics", "err", v)
}
