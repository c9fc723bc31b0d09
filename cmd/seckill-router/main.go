// Command seckill-router is the stateless front of a celled sale: it sends
// each request of the seckilld HTTP API to the cell that owns it (package
// cells): a reserve by slot = hash(campaign, sku, user_id) mod 1024
// (hash(campaign, user_id) when the campaign's purchase_limit is
// "campaign", as published in etcd: cells.Slot) through the SKU's frozen
// cell map, a batch reserve split by cell (each
// item to its user's cell, the results put back in order), pay, cancel and
// status by the cell
// the reservation id names, a request_id lookup to every cell of the SKU.
// It reads etcd every second for the SKUs published since (a map, once
// published, is frozen), and, on a request for a campaign that is not
// celled, the cell that defines it locally (its campaigns/<c>/local key,
// remembered: localCells); a campaign no cell claimed yet goes to the
// default cell, which claims it on its PUT. A command a cell may have
// received and did not answer within --timeout is answered 504
// RESULT_UNKNOWN with its lookup URL, as one node answers it
// (unanswered.go); a 421 WRONG_CELL gets the address of the cell it names.
// A cell that is a replica set of seckillds (its replicas registered under
// the cell's id) is sent to the set's primary, as etcd names it, and a 421
// NOT_PRIMARY is retried once at the primary it names (replicas.go).
//
//	seckill-router --addr 127.0.0.1:8090 --etcd HOST:PORT,...
//	               --cells c1=127.0.0.1:8081,c2=127.0.0.1:8082 [--default-cell c1]
//	seckill-router --version | --help
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/cells"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/internal/hostport"
	"github.com/seckill/seckill/internal/version"
	"github.com/seckill/seckill/ledger"
	"github.com/seckill/seckill/replica"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type options struct {
	addr, etcd, prefix, cells, defaultCell string
	timeout                                time.Duration
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("seckill-router", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8090", "listen address")
	fs.StringVar(&o.etcd, "etcd", "", "etcd endpoints, comma-separated (required)")
	fs.StringVar(&o.prefix, "etcd-prefix", ledger.DefaultPrefix, "key prefix of the ledger and the replica sets")
	fs.StringVar(&o.cells, "cells", "", "cell=host:port,... (required; http://host:port also works; a cell that is a replica set goes to its primary, as etcd names it, instead)")
	fs.StringVar(&o.defaultCell, "default-cell", "", "cell for campaigns no cell claimed (their PUT claims them there) and routes that name no campaign (default: the first of --cells)")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Second, "per-request timeout towards a cell (a command it may have received and did not answer in time: 504 RESULT_UNKNOWN)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.etcd == "" || o.cells == "" {
		return o, errors.New("--etcd and --cells are required")
	}
	if o.timeout <= 0 {
		// fasthttp would time every request out at once: 504 for all.
		return o, fmt.Errorf("--timeout must be positive, not %s", o.timeout)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if err := hostport.Listen(o.addr); err != nil {
		return o, fmt.Errorf("--addr %w", err)
	}
	order, addrs, err := cells.ParseAddrs(o.cells)
	if err != nil {
		return o, err
	}
	for _, cell := range order {
		if err := hostport.Dial(hostPort(addrs[cell])); err != nil {
			return o, fmt.Errorf("--cells: cell %s: %q is not host:port (or http://host:port)", cell, addrs[cell])
		}
	}
	if o.defaultCell != "" && !slices.Contains(order, o.defaultCell) {
		// Every request no cell claims would be answered 503: it has no address.
		return o, fmt.Errorf("--default-cell %s is not one of --cells (%s)", o.defaultCell, strings.Join(order, ","))
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	usageOut, done := version.Preamble("seckill-router", args, stdout, stderr)
	if done {
		return 0
	}
	o, err := parse(args, usageOut)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "seckill-router:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	stop, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	if err := serve(stop, o, stdout, log); err != nil {
		log.Error("seckill-router stopped", "err", err)
		return 1
	}
	return 0
}

// publishedPoll is how often the router reads the SKUs published since
// its last read.
const publishedPoll = time.Second

// mapsWait bounds the router's first read of the published cell maps,
// which it needs before its first request: attempts reads of timeout
// each, pause apart.
type mapsWait struct {
	attempts       int
	timeout, pause time.Duration
}

// startMaps is the router's wait for etcd at start: 83 s, long
// enough for an etcd started at the same time as the router.
var startMaps = mapsWait{attempts: 21, timeout: 3 * time.Second, pause: time.Second}

// await reads the published cell maps from l (etcd at endpoints), retrying
// within w. An etcd that does not answer is logged at the first failed
// read (the router listens on nothing meanwhile, so its operator would
// otherwise see nothing), and the error once w is spent names it.
func (w mapsWait) await(l *ledger.Ledger, endpoints string, log *slog.Logger) ([]cells.Published, error) {
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
		pubs, err := cells.ReadPublished(ctx, l, "")
		cancel()
		if err == nil {
			if attempt > 1 {
				log.Info("etcd answered: the cell maps are read", "etcd", endpoints)
			}
			return pubs, nil
		}
		if attempt == w.attempts {
			return nil, fmt.Errorf("etcd at %s did not answer within %v: the router needs the published cell maps before it listens: %w",
				endpoints, time.Duration(w.attempts)*(w.timeout+w.pause)-w.pause, err)
		}
		if attempt == 1 {
			log.Warn("etcd does not answer: the router needs the published cell maps before it listens; retrying",
				"etcd", endpoints, "err", err, "gives_up_after", time.Duration(w.attempts)*(w.timeout+w.pause)-w.pause)
		}
		time.Sleep(w.pause)
	}
}

// router forwards each request to its cell.
type router struct {
	routes atomic.Pointer[cells.Routes]
	// static is each cell's --cells address; a cell that is a replica
	// set (replicas.go) is sent to its primary instead.
	static    map[string]*fasthttp.HostClient
	primaries *replica.Primaries
	byAddr    sync.Map // host:port → *fasthttp.HostClient, of the primaries
	streams   sync.Map // host:port → *fasthttp.HostClient of streamed answers (stream.go)
	// streamConns are the streams' connections, closed on a stop.
	streamConns *streamConns
	// failoverWaits holds a token per request waiting for its set's next
	// primary (failover.go).
	failoverWaits chan struct{}
	order         []string
	defaultCell   string
	timeout       time.Duration
	local         *localCells
	log           *slog.Logger // a request that panicked (recovered)
}

// newRouter builds the router of o's --cells over the ledger l; its
// routes are empty until stored.
func newRouter(o options, l *ledger.Ledger) (*router, error) {
	r := &router{static: map[string]*fasthttp.HostClient{}, timeout: o.timeout, local: newLocalCells(l),
		primaries: replica.NewPrimaries(o.prefix), failoverWaits: make(chan struct{}, maxFailoverWaits),
		log: slog.New(slog.DiscardHandler), streamConns: &streamConns{timeout: o.timeout, open: map[*streamConn]struct{}{}}}
	order, addrs, err := cells.ParseAddrs(o.cells)
	if err != nil {
		return nil, err
	}
	for _, cell := range order {
		r.static[cell] = r.newClient(hostPort(addrs[cell])) // a URL as the cells' own addresses are written
	}
	r.order = order
	r.defaultCell = o.defaultCell
	if r.defaultCell == "" {
		r.defaultCell = r.order[0]
	}
	r.routes.Store(cells.NewRoutes(nil))
	return r, nil
}

// serve runs the router of o until stop ends.
func serve(stop context.Context, o options, stdout io.Writer, log *slog.Logger) error {
	client, err := ledger.Dial(strings.Split(o.etcd, ","))
	if err != nil {
		return err
	}
	defer client.Close()
	l := ledger.New(client, o.prefix)
	r, err := newRouter(o, l)
	if err != nil {
		return err
	}
	r.log = log
	pubs, err := startMaps.await(l, o.etcd, log)
	if err != nil {
		return err
	}
	r.routes.Store(cells.NewRoutes(pubs))
	go r.primaries.Follow(stop, client, log)
	r.awaitPrimaries(stop, startMaps.timeout, log)
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "seckill-router listening on http://%s (%d celled SKUs, cells %v)\n", ln.Addr(), len(pubs), r.order)
	srv := r.server()
	go r.pollPublished(stop, l, log)
	go r.probeCells(stop, log)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(httpapi.LingeringListener(ln, srv.ReadTimeout)) }()
	select {
	case err := <-served:
		return err
	case <-stop.Done():
	}
	return r.shutdown(srv)
}

// shutdown stops srv: the streams copied from cells end (they would hold
// it for as long as their cells write), the requests in flight are
// answered.
func (r *router) shutdown(srv *fasthttp.Server) error {
	r.streamConns.endAll()
	return srv.ShutdownWithContext(context.Background())
}

// awaitPrimaries waits, before the router listens, for the first read of
// the replica sets' keys (replica.Primaries.Loaded), at most timeout:
// until then the router knows no set and would send a set's requests to
// its --cells address, which serves only a cell that is no replica set.
// An etcd that answered the cell maps a moment ago answers this read too;
// one that does not within timeout is logged, and the router listens
// anyway (the table fills when etcd answers).
func (r *router) awaitPrimaries(stop context.Context, timeout time.Duration, log *slog.Logger) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-r.primaries.Loaded():
	case <-stop.Done():
	case <-t.C:
		log.Warn("the replica sets' keys are not read yet: a replica set's requests go to its --cells address until they are", "waited", timeout)
	}
}

// server is the router's HTTP server. Its body limits are the cells'
// (httpapi.DefaultBodyLimits: seckilld's are not configurable), a campaign
// PUT of any token getting the large one (the cell checks the token and
// applies its own), and a request it cannot read, or announces a body
// beyond them with "Expect: 100-continue", is answered as a cell answers
// it, in JSON (httpapi.ParseError, httpapi.ExpectContinue). Stopping
// (SIGTERM), it answers the requests in flight with "Connection: close",
// as seckilld does: it closes each connection once it has answered on it,
// and a buyer not told so could write its next command on the closing
// connection and not know whether it was delivered.
func (r *router) server() *fasthttp.Server {
	limits := httpapi.DefaultBodyLimits
	anyToken := func(*fasthttp.RequestHeader) bool { return true }
	return &fasthttp.Server{Handler: r.recovered, Name: "seckill-router", ReadTimeout: 30 * time.Second, IdleTimeout: time.Minute,
		MaxRequestBodySize: limits.Request,
		HeaderReceived:     func(h *fasthttp.RequestHeader) fasthttp.RequestConfig { return limits.RequestConfig(h, anyToken) },
		ExpectHandler: func(ctx *fasthttp.RequestCtx) int {
			return httpapi.ExpectContinue(ctx, limits.Of(&ctx.Request.Header, anyToken))
		},
		ErrorHandler: func(ctx *fasthttp.RequestCtx, err error) {
			httpapi.ParseError(ctx, err, limits.Of(&ctx.Request.Header, anyToken))
		},
		SecureErrorLogMessage: true,
		CloseOnShutdown:       true,
	}
}

// pollPublished rebuilds the routes every publishedPoll from the SKUs
// published in etcd until ctx ends. A map, once published, never changes
// in etcd, so a rebuild only adds SKUs.
func (r *router) pollPublished(ctx context.Context, l *ledger.Ledger, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(publishedPoll):
		}
		readCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		pubs, err := cells.ReadPublished(readCtx, l, "")
		cancel()
		if err != nil {
			log.Debug("reading the published SKUs failed; keeping the routes", "err", err)
			continue
		}
		if len(pubs) != r.routes.Load().Len() {
			r.routes.Store(cells.NewRoutes(pubs))
		}
	}
}

// recovered is handle answering 500 INTERNAL, as seckilld does, for a
// request whose handling panicked: fasthttp would let the panic end the
// process, and with it every buyer's connection through the router.
func (r *router) recovered(ctx *fasthttp.RequestCtx) {
	defer func() {
		if v := recover(); v != nil {
			r.log.Error("request panicked", "method", string(ctx.Method()), "path", string(ctx.Path()), "panic", fmt.Sprint(v))
			ctx.Response.Reset()
			ctx.SetStatusCode(httpapi.StatusOf(httpapi.ReasonInternal))
			ctx.SetContentType("application/json")
			ctx.SetBodyString(`{"error":"` + httpapi.ReasonInternal + `"}`)
		}
	}()
	r.handle(ctx)
}

func (r *router) handle(ctx *fasthttp.RequestCtx) {
	if len(ctx.Host()) == 0 {
		// An HTTP/1.0 request may name no host, and fasthttp's client
		// writes no request without one (it fails before sending a
		// byte, an error the router would answer 504 RESULT_UNKNOWN):
		// the host the buyer asked is the router's own address.
		ctx.Request.SetHost(ctx.LocalAddr().String())
	}
	if string(ctx.Path()) == "/healthz" {
		if ownMethod(ctx) {
			ctx.SetContentType("application/json")
			ctx.SetBodyString(`{"status":"ok"}`)
		}
		return
	}
	if campaign, skuID, ok := routerMapPath(string(ctx.Path())); ok {
		if ownMethod(ctx) {
			r.answerMap(ctx, campaign, skuID)
		}
		return
	}
	route := r.routes.Load().Decide(string(ctx.Method()), string(ctx.Path()), ctx.PostBody())
	if route.Batch {
		r.forwardBatch(ctx, route)
		return
	}
	if !route.FanOut {
		cell, unsure := route.Cell, false
		if cell == "" {
			cell, unsure = r.uncelledCell(string(ctx.Path()))
		}
		forward := r.forward
		if streamed(string(ctx.Method()), string(ctx.Path())) {
			forward = r.forwardStream
		}
		if forward(ctx, cell) && unsure && ctx.Response.StatusCode() == fasthttp.StatusNotFound {
			notKnownWithoutEtcd(ctx, cell)
		}
		return
	}
	r.lookup(ctx, route.SKU.Map.Cells)
}

// uncelledCell is the cell of a request no published map routes: the cell
// that defines its campaign locally, else the default cell (a campaign no
// cell claimed yet: its PUT there claims it; a route naming no campaign);
// unsure when etcd did not say which cell claimed the campaign.
func (r *router) uncelledCell(path string) (cell string, unsure bool) {
	if campaign := campaignOfPath(path); campaign != "" {
		if cell, unsure := r.local.cellOf(campaign); cell != "" {
			return cell, false
		} else if unsure {
			return r.defaultCell, true
		}
	}
	return r.defaultCell, false
}

// notKnownWithoutEtcd replaces the default cell's 404 for a campaign the
// router sent it only because etcd did not say which cell defines it:
// another cell may (a pay of a reservation there is no "not found"), so
// the answer is etcd's silence, 503 LEDGER_UNREACHABLE with Retry-After,
// and the 404 decided nothing to undo. The default cell's own campaigns
// are served meanwhile.
func notKnownWithoutEtcd(ctx *fasthttp.RequestCtx, cell string) {
	ctx.Response.Reset()
	ctx.SetStatusCode(httpapi.StatusOf(httpapi.ReasonLedgerUnreachable))
	ctx.SetContentType("application/json")
	ctx.Response.Header.Set("Retry-After", httpapi.RetryAfterOf(httpapi.ReasonLedgerUnreachable))
	ctx.SetBodyString(fmt.Sprintf(`{"error":%q,"detail":"etcd did not answer which cell defines this campaign, and the default cell %s does not know it: retry"}`,
		httpapi.ReasonLedgerUnreachable, cell))
}

// forwardBatch splits a batch reserve of a celled SKU by cell, sends the
// sub-batches at once and answers their results in the items' order
// (cells.SplitBatch, cells.JoinBatch). A body it cannot split goes whole
// to the map's first cell (which answers it 400), one whose items all
// belong to one cell whole to that cell; a cell that does not answer
// gives its items their own answer (cells.JoinBatch: 504 RESULT_UNKNOWN
// with each item's lookup URL, or 503 when nothing was delivered).
func (r *router) forwardBatch(ctx *fasthttp.RequestCtx, route cells.Route) {
	split, err := cells.SplitBatch(route.SKU, ctx.PostBody(), actors.MaxBatchItems)
	if err != nil {
		r.forward(ctx, route.SKU.Map.Cells[0])
		return
	}
	answers := make([]cells.PartAnswer, len(split.Parts))
	if len(split.Parts) == 1 {
		err := r.send(ctx, split.Parts[0].Cell)
		if err == nil {
			return
		}
		answers[0] = cells.PartAnswer{Err: err, Unknown: delivered(err)}
	} else {
		var wg sync.WaitGroup
		for k, part := range split.Parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				ctx.Request.CopyTo(req) // the method, path and headers (a token, an entry pass's header)
				req.SetBody(part.Body)
				err := r.do(part.Cell, req, resp)
				answers[k] = cells.PartAnswer{Status: resp.StatusCode(), Body: append([]byte(nil), resp.Body()...),
					Err: err, Unknown: err != nil && delivered(err)}
			}()
		}
		wg.Wait()
	}
	ctx.Response.Reset()
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.SetBody(cells.JoinBatch(split, answers))
}

// routerMapPath parses GET /router/campaigns/{c}/skus/{s}.
func routerMapPath(path string) (campaign, skuID string, ok bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) != 5 || parts[0] != "router" || parts[1] != "campaigns" || parts[3] != "skus" {
		return "", "", false
	}
	return parts[2], parts[4], true
}

// answerMap answers the map the router sends a SKU's users by: 200 with
// its version, cells and the campaign's purchase limit ("campaign": users
// are routed by campaign and user, the same cell on every SKU), or 404
// NOT_CELLED.
func (r *router) answerMap(ctx *fasthttp.RequestCtx, campaign, skuID string) {
	ctx.SetContentType("application/json")
	p := r.routes.Load().SKU(campaign, skuID)
	if p == nil {
		ctx.SetStatusCode(httpapi.StatusOf(httpapi.ReasonNotCelled))
		ctx.SetBodyString(`{"error":"` + httpapi.ReasonNotCelled + `","detail":"the router has no cell map for this SKU (not published, or published less than a second ago)"}`)
		return
	}
	b, _ := json.Marshal(struct {
		Version       uint64   `json:"cell_map_version"`
		Cells         []string `json:"cells"`
		PurchaseLimit string   `json:"purchase_limit"`
	}{p.Map.Version, p.Map.Cells, p.Definition.PurchaseLimit.String()})
	ctx.SetBody(b)
}

// forward sends the request to cell and copies its answer; false (and
// the router's own answer: unanswered) when the cell did not answer.
func (r *router) forward(ctx *fasthttp.RequestCtx, cell string) bool {
	if err := r.send(ctx, cell); err != nil {
		unanswered(ctx, cell, err)
		return false
	}
	return true
}

// send sends the request to cell and copies its answer into ctx's
// response (a 421 WRONG_CELL gets the address of the cell it names,
// when it has none and the router knows it); the error when the cell did
// not answer, the response then undefined.
func (r *router) send(ctx *fasthttp.RequestCtx, cell string) error {
	ctx.Response.Reset()
	if err := r.do(cell, &ctx.Request, &ctx.Response); err != nil {
		return err
	}
	if ctx.Response.StatusCode() == fasthttp.StatusMisdirectedRequest {
		r.addCellAddress(&ctx.Response)
	}
	return nil
}

// addCellAddress adds to a WRONG_CELL answer without an "address" the
// address the router sends that "cell" to (--cells).
func (r *router) addCellAddress(resp *fasthttp.Response) {
	var p fastjson.Parser
	v, err := p.ParseBytes(resp.Body())
	if err != nil || v.Type() != fastjson.TypeObject || v.Exists("address") {
		return
	}
	c := r.client(string(v.GetStringBytes("cell")))
	if c == nil {
		return
	}
	var a fastjson.Arena
	v.Set("address", a.NewString("http://"+c.Addr))
	resp.SetBody(v.MarshalTo(nil))
}
