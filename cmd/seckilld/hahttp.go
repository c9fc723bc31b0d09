package main

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/replica"
)

// What a member of a replica set answers over HTTP in every role, before
// the API (httpapi.Config.Front while primary):
//
//	GET /healthz         200 {"status":"ok","role",...}: the role, epoch and primary
//	GET /admin/replica   the replica's state (haState), with the admin token
//	POST /admin/replica/switchover?to=B   hand the lead to standby B
//	                     (switchover.go): 202, then see GET /admin/replica
//
// While it is not the primary: GET /metrics (this replica's registry),
// GET /readyz 503 NOT_PRIMARY, a GET of a reservation or a request_id
// whose committed record the standby applied (httpapi.StandbyRead), and
// every other request 421 NOT_PRIMARY naming the primary
// (httpapi.NotPrimary). The front checks the state on
// every request, so a demoted primary refuses from the moment it demotes,
// on connections already open too.

const (
	replicaStatusPath     = "/admin/replica"
	replicaSwitchoverPath = "/admin/replica/switchover"
)

// healthState is /healthz of a replica.
type healthState struct {
	Status  string `json:"status"`
	Set     string `json:"replica_set"`
	Name    string `json:"replica"`
	Role    string `json:"role"`
	Epoch   uint64 `json:"epoch"`
	Primary string `json:"primary,omitempty"`
}

// front answers the replica's own routes and, when this replica does not
// serve the API (not primary, or demoted meanwhile), NOT_PRIMARY.
func (n *haNode) front(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	tokenID := sha256.Sum256([]byte(n.deps.token))
	return func(ctx *fasthttp.RequestCtx) {
		s := n.state.Load()
		switch string(ctx.Path()) {
		case "/healthz":
			writeJSON(ctx, fasthttp.StatusOK, healthState{Status: "ok", Set: s.Set, Name: s.Name, Role: s.Role, Epoch: s.Epoch, Primary: s.Primary})
			return
		case replicaStatusPath:
			if !ctx.IsGet() && !ctx.IsHead() {
				writeJSON(ctx, fasthttp.StatusMethodNotAllowed, map[string]string{"error": "METHOD_NOT_ALLOWED"})
				ctx.Response.Header.Set("Allow", "GET, HEAD")
				return
			}
			if !bearer(ctx, tokenID) {
				ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="seckill admin"`)
				writeJSON(ctx, fasthttp.StatusUnauthorized, map[string]string{"error": "UNAUTHORIZED"})
				return
			}
			if httpapi.RefuseQueryOrBody(ctx) {
				return
			}
			writeJSON(ctx, fasthttp.StatusOK, s)
			return
		case replicaSwitchoverPath:
			n.handleSwitchover(ctx, tokenID)
			return
		}
		if n.paused.Load() {
			ctx.Response.Header.Set("Retry-After", httpapi.RetryAfterOf(httpapi.ReasonUnavailable))
			writeJSON(ctx, fasthttp.StatusServiceUnavailable, map[string]string{"error": httpapi.ReasonUnavailable,
				"detail": "a switchover hands the lead to another replica of " + s.Set + ": retry in a moment"})
			return
		}
		if !s.serving {
			if string(ctx.Path()) == "/metrics" || string(ctx.Path()) == "/readyz" {
				next(ctx) // the standby's own handler
				return
			}
			if s.reads != nil && httpapi.StandbyRead(ctx, s.reads) {
				return // a committed record this standby applied
			}
			httpapi.NotPrimary(ctx, s.Set, s.Primary, s.primaryHTTP)
			return
		}
		if !n.campaignsDefined() && bytes.HasPrefix(ctx.Path(), []byte("/v1/")) {
			// A buyer told 404 for a SKU of the sale would give up; the
			// sale's SKUs are being defined (/readyz says "starting").
			ctx.Response.Header.Set("Retry-After", httpapi.RetryAfterOf(httpapi.ReasonUnavailable))
			writeJSON(ctx, fasthttp.StatusServiceUnavailable, map[string]string{"error": httpapi.ReasonUnavailable,
				"detail": "the primary of " + s.Set + " is defining its campaigns: retry in a moment"})
			return
		}
		next(ctx)
	}
}

// campaignsDefined reports whether the primary tenure's campaigns are
// defined (or its definition ended with the tenure).
func (n *haNode) campaignsDefined() bool {
	c := n.campaigns.Load()
	if c == nil {
		return true // no tenure yet: front answers NOT_PRIMARY before this
	}
	select {
	case <-*c:
		return true
	default:
		return false
	}
}

// handleSwitchover is POST /admin/replica/switchover?to=B.
func (n *haNode) handleSwitchover(ctx *fasthttp.RequestCtx, tokenID [32]byte) {
	if !ctx.IsPost() {
		ctx.Response.Header.Set("Allow", "POST")
		writeJSON(ctx, fasthttp.StatusMethodNotAllowed, map[string]string{"error": "METHOD_NOT_ALLOWED"})
		return
	}
	if !bearer(ctx, tokenID) {
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="seckill admin"`)
		writeJSON(ctx, fasthttp.StatusUnauthorized, map[string]string{"error": "UNAUTHORIZED"})
		return
	}
	// ?to= once and nothing else: of two, which would be meant?
	if httpapi.RefuseQueryOrBody(ctx, "to") {
		return
	}
	to := string(ctx.QueryArgs().Peek("to"))
	s := n.state.Load()
	switch {
	case !replica.ValidName(to) || to == s.Name:
		writeJSON(ctx, fasthttp.StatusBadRequest, map[string]string{"error": "BAD_REQUEST", "detail": "?to= must name another replica of the set"})
	case !s.serving:
		httpapi.NotPrimary(ctx, s.Set, s.Primary, s.primaryHTTP)
	case n.askSwitchover(to) != nil:
		writeJSON(ctx, fasthttp.StatusConflict, map[string]string{"error": "SWITCHOVER_IN_PROGRESS"})
	default:
		writeJSON(ctx, fasthttp.StatusAccepted, map[string]string{"switchover": "asked", "from": s.Name, "to": to})
	}
}

// standbyHandler serves /metrics from reg and /readyz (503: the API is
// served by the primary) while the replica is not primary.
func (n *haNode) standbyHandler(reg *prometheus.Registry) fasthttp.RequestHandler {
	metrics := fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	return func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) == "/metrics" {
			metrics(ctx)
			return
		}
		s := n.state.Load()
		httpapi.NotPrimary(ctx, s.Set, s.Primary, s.primaryHTTP)
		ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
	}
}

// bearer reports whether ctx carries the admin token (compared by digest,
// in constant time).
func bearer(ctx *fasthttp.RequestCtx, want [32]byte) bool {
	const prefix = "Bearer "
	h := ctx.Request.Header.Peek("Authorization")
	if len(h) <= len(prefix) || string(h[:len(prefix)]) != prefix {
		return false
	}
	got := sha256.Sum256(h[len(prefix):])
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

func writeJSON(ctx *fasthttp.RequestCtx, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic("seckilld: encoding an answer: " + err.Error()) // plain structs always encode
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}

// collector exports the replica's state on /metrics.
func (n *haNode) collector() prometheus.Collector { return haCollector{n} }

type haCollector struct{ n *haNode }

// The replica's role and the set's epoch and sync set; each standby's
// connection and lag are the stream's metrics (seckill_replica_standby_*).
var (
	descRole  = prometheus.NewDesc("seckill_replica_role", "1 for the replica's role now (primary, standby, candidate), 0 for the others", []string{"replica_set", "replica", "role"}, nil)
	descEpoch = prometheus.NewDesc("seckill_replica_set_epoch", "the replica set's epoch as this replica last read it in etcd (its own while primary)", []string{"replica_set", "replica"}, nil)
	descSync  = prometheus.NewDesc("seckill_replica_sync_standby", "on the primary, 1 for each standby of the published sync set (it may be promoted)", []string{"replica_set", "replica", "standby"}, nil)
)

func (c haCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRole, descEpoch, descSync} {
		ch <- d
	}
}

func (c haCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.n.state.Load()
	for _, r := range []replica.Role{replica.Primary, replica.Standby, replica.Candidate} {
		v := 0.0
		if r.String() == s.Role {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descRole, prometheus.GaugeValue, v, s.Set, s.Name, r.String())
	}
	ch <- prometheus.MustNewConstMetric(descEpoch, prometheus.GaugeValue, float64(s.Epoch), s.Set, s.Name)
	for _, b := range s.Sync {
		ch <- prometheus.MustNewConstMetric(descSync, prometheus.GaugeValue, 1, s.Set, s.Name, b)
	}
}
