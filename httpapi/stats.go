package httpapi

import (
	"bufio"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// GET /admin/stats and GET /admin/stats/stream: the sale's figures per SKU
// and in total, for the dashboard (dashboard.go) and for scripts. Both
// answer from the sampler's latest sample (stats_sampler.go).

// Limits of the stats routes.
const (
	// DefaultStatsInterval is Config.StatsInterval when zero.
	DefaultStatsInterval = time.Second
	// StatsStreamMaxAge is how long one stream is served before the server
	// ends it with a "rotate" event (the client reconnects at once): a
	// stream's connection is not held forever.
	StatsStreamMaxAge = 10 * time.Minute
	// maxStatsSelection bounds the ids of ?skus=.
	maxStatsSelection = 1000
	// StatsStreamMaxRows bounds the rows of each stream event (and of its
	// history): ?top= beyond it, or none, means this many busiest.
	StatsStreamMaxRows = 500
)

// statsPath and statsStreamPath are the routes (the stream's write
// timeout is set by its path: headerReceived).
const (
	statsPath       = "/admin/stats"
	statsStreamPath = "/admin/stats/stream"
)

// statsSelection picks the rows of an answer.
type statsSelection struct {
	skus  map[string]bool // "campaign_id/sku_id"; nil: any
	match string          // substring of "campaign_id/sku_id"; "": any
	top   int             // the busiest top; 0: all
}

// parseSelection reads ?skus=c/s,c/s&match=text&top=N.
func parseSelection(args *fasthttp.Args) (statsSelection, error) {
	var sel statsSelection
	if v := string(args.Peek("skus")); v != "" {
		ids := strings.Split(v, ",")
		if len(ids) > maxStatsSelection {
			return sel, errors.New("skus: more than " + strconv.Itoa(maxStatsSelection) + " ids")
		}
		sel.skus = make(map[string]bool, len(ids))
		for _, id := range ids {
			if c, s, ok := strings.Cut(id, "/"); !ok || checkID("campaign_id", c) != "" || checkID("sku_id", s) != "" {
				return sel, errors.New("skus: " + quoteInput(id) + " is not campaign_id/sku_id")
			}
			sel.skus[id] = true
		}
	}
	sel.match = string(args.Peek("match"))
	if len(sel.match) > 256 {
		return sel, errors.New("match: longer than 256 bytes")
	}
	if v := args.Peek("top"); len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 0 {
			return sel, errors.New("top: not a count")
		}
		sel.top = n
	}
	return sel, nil
}

// pick returns the rows sel selects, in their order (busiest first).
func (sel statsSelection) pick(rows []statsRow) []statsRow {
	out := make([]statsRow, 0, min(len(rows), max(sel.top, 16)))
	for _, r := range rows {
		id := r.CampaignID + "/" + r.SKUID
		if (sel.skus != nil && !sel.skus[id]) || (sel.match != "" && !strings.Contains(id, sel.match)) {
			continue
		}
		out = append(out, r)
		if sel.top > 0 && len(out) == sel.top {
			break
		}
	}
	return out
}

// latestStats returns the latest sample with its rows selected, taking a
// first sample if none was taken yet.
func (s *Server) latestStats(sel statsSelection) statsDoc {
	s.stats.mu.Lock()
	doc := s.stats.latest
	s.stats.mu.Unlock()
	if doc == nil {
		s.SampleStats(time.Now())
		s.stats.mu.Lock()
		doc = s.stats.latest
		s.stats.mu.Unlock()
	}
	out := *doc
	out.Rows = sel.pick(doc.Rows)
	return out
}

// handleStats is GET /admin/stats: the latest sample as JSON.
func (s *Server) handleStats(ctx *fasthttp.RequestCtx) string {
	sel, err := parseSelection(ctx.QueryArgs())
	if err != nil {
		return write(ctx, errorReply(reasonBadRequest, err.Error()))
	}
	ctx.Response.Header.Set("Cache-Control", "no-store")
	return write(ctx, jsonReply(fasthttp.StatusOK, outcomeOK, s.latestStats(sel)))
}

// handleStatsStream is GET /admin/stats/stream: Server-Sent Events, the
// same selection as /admin/stats (at most StatsStreamMaxRows rows). It
// sends a "history" event (the last minute of sparklines of the selected
// rows, statsHistory), then a "stats" event (statsDoc) per sample. It ends
// with a "rotate" event after StatsStreamMaxAge, and without one when the
// server shuts down. A browser reads it with fetch(), which can send the
// Authorization header EventSource cannot.
func (s *Server) handleStatsStream(ctx *fasthttp.RequestCtx) string {
	sel, err := parseSelection(ctx.QueryArgs())
	if err != nil {
		return write(ctx, errorReply(reasonBadRequest, err.Error()))
	}
	if sel.top == 0 || sel.top > StatsStreamMaxRows {
		sel.top = StatsStreamMaxRows
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("text/event-stream; charset=utf-8")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.Response.Header.Set("X-Accel-Buffering", "no") // proxies: do not buffer
	// A HEAD gets the stream's headers; no stream is opened.
	if ctx.IsHead() {
		return outcomeOK
	}
	doc := s.latestStats(sel) // makes sure a sample exists
	sp := s.stats
	sp.mu.Lock()
	history := sp.historyLocked(doc.Rows)
	changed := sp.changed
	sp.mu.Unlock()

	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		if sseEvent(w, "history", history) != nil || sseEvent(w, "stats", doc) != nil {
			return
		}
		rotate := time.NewTimer(StatsStreamMaxAge)
		defer rotate.Stop()
		for {
			select {
			case <-sp.stop:
				return
			case <-rotate.C:
				_ = sseEvent(w, "rotate", struct{}{})
				return
			case <-changed:
			}
			sp.mu.Lock()
			changed = sp.changed
			sp.mu.Unlock()
			if sseEvent(w, "stats", s.latestStats(sel)) != nil {
				return // the client went away
			}
		}
	})
	return outcomeOK
}

// sseEvent writes one event and flushes it.
func sseEvent(w *bufio.Writer, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.WriteString("event: ")
	w.WriteString(name)
	w.WriteString("\ndata: ")
	w.Write(b) // JSON has no raw newline: one data line
	w.WriteString("\n\n")
	return w.Flush()
}

// headerReceived is fasthttp's HeaderReceived: requestConfig, and the
// write timeout of a stream (its whole response is one write).
func (s *Server) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	rc := s.requestConfig(h)
	if !h.IsGet() { // the stream is a GET; the reserve flood is not
		return rc
	}
	if path, _, _ := strings.Cut(string(h.RequestURI()), "?"); path == statsStreamPath {
		rc.WriteTimeout = StatsStreamMaxAge + s.cfg.WriteTimeout
	}
	return rc
}

// runStats samples every Config.StatsInterval until Shutdown (not at all
// when it is negative). Serve starts it once.
func (s *Server) runStats() {
	if s.cfg.StatsInterval < 0 {
		return
	}
	s.stats.runOnce.Do(func() {
		go func() {
			t := time.NewTicker(s.cfg.StatsInterval)
			defer t.Stop()
			s.SampleStats(time.Now())
			for {
				select {
				case <-s.stats.stop:
					return
				case now := <-t.C:
					s.SampleStats(now)
				}
			}
		}()
	})
}

// stopStats ends the sampling loop and the streams (Shutdown).
func (s *Server) stopStats() {
	s.stats.stopOnce.Do(func() { close(s.stats.stop) })
}
