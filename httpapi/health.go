package httpapi

import (
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// healthBody answers /healthz and /readyz.
type healthBody struct {
	// Status is "ok" (/healthz), "ready", "degraded", "starting" or
	// "draining".
	Status string `json:"status"`
	// Unavailable lists the SKUs ("campaign/sku") that failed to recover
	// or whose log failed, at most maxNotReadyListed of them.
	Unavailable []string `json:"unavailable,omitempty"`
}

// handleHealthz is GET /healthz: the process is up and serving.
func (s *Server) handleHealthz(ctx *fasthttp.RequestCtx) string {
	return write(ctx, jsonReply(fasthttp.StatusOK, outcomeOK, healthBody{Status: "ok"}))
}

// maxNotReadyListed bounds the SKUs /readyz names.
const maxNotReadyListed = 20

// handleReadyz is GET /readyz, for a load balancer: 200 while the server
// serves the sale it was started with, 503 before its campaigns are
// defined (starting: Config.Defined) and from the start of Shutdown
// (draining). A SKU that is unavailable does not make the node unready:
// every SKU lives on this node only, so taking it out of rotation would
// stop the SKUs that do serve and heal none; the answer is then 200
// "degraded" with the SKUs named (and seckill_sku_unavailable says it
// too, for alerts).
func (s *Server) handleReadyz(ctx *fasthttp.RequestCtx) string {
	if s.draining.Load() {
		return write(ctx, reasonReply(ReasonUnavailable, healthBody{Status: "draining"}))
	}
	if s.cfg.Defined != nil {
		select {
		case <-s.cfg.Defined:
		default:
			return write(ctx, reasonReply(ReasonUnavailable, healthBody{Status: "starting"}))
		}
	}
	var bad []string
	for _, st := range s.engine.AllStats() {
		if st.Unavailable {
			if len(bad) < maxNotReadyListed {
				bad = append(bad, st.CampaignID+"/"+st.SKUID)
			}
		}
	}
	if len(bad) > 0 {
		return write(ctx, jsonReply(fasthttp.StatusOK, "degraded", healthBody{Status: "degraded", Unavailable: bad}))
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
		// OpenMetrics when the scraper asks for it (Accept), the text
		// format otherwise.
		EnableOpenMetrics: true,
	})
	return fasthttpadaptor.NewFastHTTPHandler(h)
}

// promLogger sends promhttp's errors to slog.
type promLogger struct{ s *Server }

// Println implements promhttp.Logger.
func (l promLogger) Println(v ...any) {
	l.s.log.Error("metrics", "err", v)
}
