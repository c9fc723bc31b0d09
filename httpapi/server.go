package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/router"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/internal/promhist"
	"github.com/valyala/fasthttp"
)

// Defaults of Config. Each is used when the field is zero.
const (
	// DefaultMaxQueueWait is the longest a reserve should wait for its
	// answer (the buyer's maximum acceptable wait): in a SKU's inbox and
	// for its group commit.
	DefaultMaxQueueWait = time.Second
	// DefaultRetryMargin is added to the available stock in the admission
	// bound: room for duplicates and requests the engine will reject.
	DefaultRetryMargin = 32
	// DefaultMinConsumerRate (messages/s) is the floor of consumer_rate, so
	// that a SKU that has processed nothing yet still admits.
	DefaultMinConsumerRate = 1000
	// DefaultDedupCacheSize bounds the answer cache: 100,000 request_ids,
	// a few hundred bytes each (tens of MiB at most).
	DefaultDedupCacheSize = 100_000
	// DefaultMaxRequestBodySize caps request bodies (bytes).
	DefaultMaxRequestBodySize = 4 << 10
	// DefaultMaxCampaignBodySize caps the body of an authorised campaign
	// PUT (bytes): the campaign file's limit, ~25,000 SKUs of short ids.
	DefaultMaxCampaignBodySize = MaxCampaignFileSize
	// DefaultReadTimeout bounds reading one request, headers and body.
	DefaultReadTimeout = 5 * time.Second
	// DefaultWriteTimeout bounds writing one response.
	DefaultWriteTimeout = 5 * time.Second
	// DefaultIdleTimeout closes keep-alive connections idle that long.
	DefaultIdleTimeout = 60 * time.Second
	// DefaultFeedHeartbeat is the period of an event feed stream's
	// heartbeat comment.
	DefaultFeedHeartbeat = 15 * time.Second
	// DefaultMaxConnections bounds the connections served at once; more are
	// answered 503 UNAVAILABLE (JSON, Retry-After) and closed (connLimiter).
	DefaultMaxConnections = 16 << 10
	// DefaultStatusMaxAge is the Cache-Control max-age of a SKU status that
	// can change any moment.
	DefaultStatusMaxAge = time.Second
	// DefaultFinalStatusMaxAge is the Cache-Control max-age of ENDED and
	// FINAL_SOLD_OUT: a status the sale itself cannot change any more may
	// be cached longer, which takes the refresh storm of a sold-out page
	// off the server. Only a redefinition (a raised sale_limit or end_at)
	// reopens the SKU, and clients behind a cache learn it this much later.
	DefaultFinalStatusMaxAge = 30 * time.Second
)

// Config configures a Server. Engine and AdminToken are required; every
// other zero field takes its default. The optional features are passed in
// as fields: a nil one is absent, and its routes answer 404.
type Config struct {
	// Engine executes the commands.
	Engine Engine
	// Feed serves the event feed and the reservations export
	// (/admin/campaigns/{c}/events, .../skus/{s}/events and
	// .../skus/{s}/reservations): feed.New over the engine.
	Feed *feed.Feed
	// Lotteries runs the entries and draws of lottery SKUs (the
	// /entries, /lottery and /lottery/* routes).
	Lotteries Lotteries
	// Claimer is asked before a campaign is defined through the admin
	// API (a cell's guard: the campaign must not be published across
	// cells); nil: every campaign may be.
	Claimer CampaignClaimer
	// CellGuard, on a cell, is asked about each reserve's user as soon as
	// its SKU is known, before any fast answer (421 WRONG_CELL for a user
	// of another cell); nil: the service serves no cells.
	CellGuard CellGuard
	// AdminToken is the bearer token of /admin routes.
	AdminToken string
	// PaymentSecret is the HMAC-SHA256 key of payment callbacks
	// (X-Signature: hex of the HMAC of the raw body). Empty accepts
	// unsigned callbacks.
	PaymentSecret []byte
	// MaxQueueWait is the longest a buyer should wait: admission stops
	// before the wait it judges (inbox age and commit latency) reaches it.
	MaxQueueWait time.Duration
	// RequestTimeout is how long a handler waits for the engine before it
	// answers 504 RESULT_UNKNOWN. Default: MaxQueueWait + 2 s.
	RequestTimeout time.Duration
	// RetryMargin is added to available stock in the admission bound.
	RetryMargin int
	// MinConsumerRate is the floor of the consumer rate, messages/s.
	MinConsumerRate float64
	// DedupCacheSize is the number of request_id answers kept.
	DedupCacheSize int
	// MaxRequestBodySize caps request bodies, in bytes.
	MaxRequestBodySize int
	// MaxCampaignBodySize caps, in bytes, the body of a PUT
	// /admin/campaigns/{c} that carries the admin token (a large catalog
	// in one campaign); every other request, an unauthorised PUT too, has
	// MaxRequestBodySize.
	MaxCampaignBodySize int
	// MaxBatchBodySize caps, in bytes, the body of a batch reserve
	// (default DefaultMaxBatchBodySize).
	MaxBatchBodySize int
	// MaxConnections bounds the connections served at once; keep it below
	// the process's file descriptor limit.
	MaxConnections int
	// ReadTimeout, WriteTimeout and IdleTimeout are the connection timeouts.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// FeedHeartbeat is the period of an event feed stream's ": ping"
	// comment (default DefaultFeedHeartbeat): it keeps proxies from
	// closing an idle stream, and a client that vanished is found by it.
	FeedHeartbeat time.Duration
	// StatusMaxAge and FinalStatusMaxAge are the Cache-Control max-age of
	// SKU status answers, changing and final.
	StatusMaxAge, FinalStatusMaxAge time.Duration
	// Clock is the server's clock (the campaign window is judged on it).
	Clock func() time.Time
	// Logger receives errors and panics.
	Logger *slog.Logger
	// StatsInterval is the period of the dashboard's stats sample
	// (/admin/stats: rates over it); negative: no background sampling (a
	// test calls Server.SampleStats).
	StatsInterval time.Duration
	// Registry receives the service's metrics and is served on /metrics
	// (give the engine the same one). Default: a new registry.
	Registry *prometheus.Registry
	// Registerer, when set, receives the service's metrics in Registry's
	// place (a registerer of Registry that can take them out again when
	// the service closes); /metrics still serves Registry.
	Registerer prometheus.Registerer
	// TopUpPending, when set, tells whether a celled SKU's cell is waiting
	// for a top-up from the quota ledger: its SOLD_OUT answers then carry
	// Retry-After (cell.go). Nil: never.
	TopUpPending func(campaignID, skuID string) bool
	// EntryPasses configures entry passes: their keys, the issuing route.
	EntryPasses EntryPassConfig
	// Front, when set, is put in front of every route: it gets each
	// request first and calls next to have the API answer it. A member of
	// a replica set answers its own routes there, and NOT_PRIMARY from
	// the moment it stops leading (replica.go). Nil: the API alone.
	Front func(next fasthttp.RequestHandler) fasthttp.RequestHandler
	// ReplicaSet, when set (a member of a replica set), returns the
	// replica's state as GET /admin/replica shows it (role, epoch, sync
	// set, each standby's lag): each stats sample carries it as
	// replica_set, and the dashboard draws it.
	ReplicaSet func() any
	// Defined, when set, is closed once the campaigns the server was
	// started with (a campaign file, the demo) are defined: until then
	// /readyz answers 503 "starting", so that a load balancer sends no
	// buyer to a server that does not know the SKUs of the sale yet. A
	// primary of a replica set defines them while it serves (with
	// --sync-strict nothing commits before a standby is waited for). Nil:
	// they were defined before the server was built.
	Defined <-chan struct{}
}

func (c *Config) fill() error {
	if c.Engine == nil {
		return errors.New("httpapi: Config.Engine is required")
	}
	if c.AdminToken == "" {
		return errors.New("httpapi: Config.AdminToken is required")
	}
	if err := c.EntryPasses.check(); err != nil {
		return err
	}
	if c.MaxQueueWait <= 0 {
		c.MaxQueueWait = DefaultMaxQueueWait
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = c.MaxQueueWait + 2*time.Second
	}
	if c.RetryMargin <= 0 {
		c.RetryMargin = DefaultRetryMargin
	}
	if c.MinConsumerRate <= 0 {
		c.MinConsumerRate = DefaultMinConsumerRate
	}
	if c.DedupCacheSize <= 0 {
		c.DedupCacheSize = DefaultDedupCacheSize
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.MaxRequestBodySize <= 0 {
		c.MaxRequestBodySize = DefaultMaxRequestBodySize
	}
	if c.MaxCampaignBodySize <= 0 {
		c.MaxCampaignBodySize = DefaultMaxCampaignBodySize
	}
	if c.MaxBatchBodySize <= 0 {
		c.MaxBatchBodySize = DefaultMaxBatchBodySize
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.FeedHeartbeat <= 0 {
		c.FeedHeartbeat = DefaultFeedHeartbeat
	}
	if c.StatusMaxAge <= 0 {
		c.StatusMaxAge = DefaultStatusMaxAge
	}
	if c.FinalStatusMaxAge <= 0 {
		c.FinalStatusMaxAge = DefaultFinalStatusMaxAge
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.StatsInterval == 0 {
		c.StatsInterval = DefaultStatsInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	if c.Registerer == nil {
		c.Registerer = c.Registry
	}
	return nil
}

// Server is the HTTP service. Create it with New, run it with Serve, stop
// it with Shutdown.
type Server struct {
	cfg     Config
	engine  Engine
	log     *slog.Logger
	limits  limits
	metrics *metrics
	gates   *gates
	flights *flights
	answers *answerCache
	// deadlines bound a reserve's wait for the engine (RequestTimeout)
	deadlines *deadlines
	// cellGuard is Config.CellGuard (nil: it serves no cells).
	cellGuard CellGuard
	// loginCodes and sessionKey are the dashboard's login links
	// (dashboard_login.go).
	loginCodes loginCodes
	sessionKey [32]byte
	// retryAfter is the Retry-After of QUEUE_FULL answers.
	retryAfter string
	adminID    [32]byte // SHA-256 of the admin token
	http       *fasthttp.Server
	// draining is set by Shutdown: /readyz answers 503 from then on.
	draining atomic.Bool
	// serving holds the listeners Serve was given, so that Shutdown ends
	// a Serve whatever the order the two were called in.
	serving struct {
		sync.Mutex
		shutdown  bool
		listeners []net.Listener
	}
	// feed is the event feed (Config.Feed; nil: none); feeds is cancelled
	// by Shutdown: long polls answer and event streams end (feed.go).
	feed        *feed.Feed
	feeds       context.Context
	stopFeeds   context.CancelFunc
	feedStreams atomic.Int64 // SSE streams open
	// lotteries and claimer are Config.Lotteries and Config.Claimer.
	lotteries Lotteries
	claimer   CampaignClaimer

	// ingress and stats feed the dashboard (stats*.go).
	ingress *ingressStats
	stats   *statsSampler

	// passMetrics counts entry-pass refusals and issued passes;
	// issuerID is the SHA-256 of the entry-pass issuer token.
	passMetrics *passMetrics
	issuerID    [32]byte
}

// New checks cfg, registers the service's metrics on cfg.Registerer and
// returns a Server ready to Serve.
func New(cfg Config) (*Server, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("httpapi: registering metrics: %w", err)
	}
	pm, err := newPassMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("httpapi: registering metrics: %w", err)
	}
	s := &Server{
		cfg:    cfg,
		engine: cfg.Engine,
		log:    cfg.Logger,
		limits: limits{admission.Limits{
			MaxQueueWait: cfg.MaxQueueWait,
			RetryMargin:  int64(cfg.RetryMargin),
			MinRate:      cfg.MinConsumerRate,
		}},
		metrics:    m,
		gates:      newGates(m.admissions),
		flights:    newFlights(),
		answers:    newAnswerCache(cfg.DedupCacheSize),
		deadlines:  &deadlines{timeout: cfg.RequestTimeout},
		adminID:    digest(cfg.AdminToken),
		sessionKey: dashboardSessionKey(cfg.AdminToken),
		retryAfter: retryAfterSeconds(cfg.MaxQueueWait),
		ingress:    &ingressStats{engine: cfg.Engine},
		stats:      newStatsSampler(),
	}
	s.feed, s.lotteries, s.claimer, s.cellGuard = cfg.Feed, cfg.Lotteries, cfg.Claimer, cfg.CellGuard
	s.feeds, s.stopFeeds = context.WithCancel(context.Background())
	if err := s.registerFeedGauges(cfg.Registerer); err != nil {
		return nil, fmt.Errorf("httpapi: registering metrics: %w", err)
	}
	s.passMetrics, s.issuerID = pm, digest(cfg.EntryPasses.IssuerToken)
	for _, st := range cfg.Engine.AllStats() { // each SKU's series exist from the start
		s.gates.get(st.CampaignID, st.SKUID)
	}
	if err := cfg.Registerer.Register(newSKUCollector(cfg.Engine, s.gates, s.limits)); err != nil {
		return nil, fmt.Errorf("httpapi: registering the SKU collector: %w", err)
	}
	handler := s.Handler()
	if cfg.Front != nil {
		handler = cfg.Front(handler)
	}
	s.http = &fasthttp.Server{
		Handler:               handler,
		ErrorHandler:          s.parseError,
		ReadTimeout:           cfg.ReadTimeout,
		WriteTimeout:          cfg.WriteTimeout,
		IdleTimeout:           cfg.IdleTimeout,
		MaxRequestBodySize:    cfg.MaxRequestBodySize,
		HeaderReceived:        s.headerReceived,
		ExpectHandler:         s.expectContinue,
		NoDefaultServerHeader: true,
		CloseOnShutdown:       true,
		Concurrency:           cfg.MaxConnections + connLimitSlack, // connLimiter refuses first
		Logger:                fasthttpLogger{cfg.Logger},
		// fasthttp's parse errors leave out the request bytes they would
		// otherwise quote (fasthttpLogger bounds whatever remains).
		SecureErrorLogMessage: true,
	}
	return s, nil
}

// Handler returns the routed request handler: every route of the API,
// HEAD on every GET route, OPTIONS on every route, JSON 404 and 405
// answers, and panic recovery (500 INTERNAL).
func (s *Server) Handler() fasthttp.RequestHandler {
	r, reserve := s.router()
	return s.reserveRoute(reserve, r.Handler) // reserveroute.go
}

// router builds the router of every route (Handler, and the OpenAPI test
// through its list of routes) and returns the reserve route's metrics with
// it, for the fast route of known SKUs.
func (s *Server) router() (r *router.Router, reserve *routeMetrics) {
	r = router.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	// 405 carries Allow, set by the router (RFC 9110, section 15.5.6).
	r.HandleMethodNotAllowed = true
	r.MethodNotAllowed = s.counted("method_not_allowed", func(ctx *fasthttp.RequestCtx) string {
		return write(ctx, errorReply(reasonMethodNotAllowed, "allowed: "+string(ctx.Response.Header.Peek("Allow"))))
	})
	// OPTIONS on a route is answered by the router: its Allow header, and
	// 204 without a body (RFC 9110, section 9.3.7).
	r.HandleOPTIONS = true
	r.GlobalOPTIONS = s.counted("options", func(ctx *fasthttp.RequestCtx) string {
		ctx.SetStatusCode(fasthttp.StatusNoContent)
		return outcomeOK
	})
	r.NotFound = s.counted("not_found", func(ctx *fasthttp.RequestCtx) string {
		return write(ctx, errorReply(reasonNotFound, "no such route"))
	})
	r.PanicHandler = s.recoverPanic

	// get serves a GET route on HEAD too: the same answer, whose body
	// fasthttp leaves out (RFC 9110, section 9.3.2).
	get := func(path string, h fasthttp.RequestHandler) {
		r.GET(path, h)
		r.HEAD(path, h)
	}

	reserve = s.newRouteMetrics("reserve")
	r.POST("/v1/campaigns/{campaign_id}/skus/{sku_id}/reservations", func(ctx *fasthttp.RequestCtx) {
		ctx.SetUserValue(routeKey, reserve.name)
		campaignID, skuID, ok := pathSKU(ctx)
		s.timedReserve(ctx, reserve, &reserveTarget{campaignID: campaignID, skuID: skuID}, ok)
	})
	r.POST("/v1/campaigns/{campaign_id}/skus/{sku_id}/reservations:batch", s.route("reserve_batch", s.handleReserveBatch))
	r.POST("/v1/campaigns/{campaign_id}/skus/{sku_id}/entry-passes", s.route("issue_entry_pass", s.issuer(s.handleIssuePass)))
	get("/v1/campaigns/{campaign_id}/skus/{sku_id}", s.route("sku_status", s.handleStatus))
	get("/v1/campaigns/{campaign_id}/skus/{sku_id}/requests/{request_id}", s.route("lookup_request", s.handleLookup))
	get("/v1/reservations/{reservation_id}", s.route("get_reservation", s.handleGet))
	r.POST("/v1/reservations/{reservation_id}/payment", s.route("pay", s.handlePay))
	r.POST("/v1/reservations/{reservation_id}/cancel", s.route("cancel", s.handleCancel))

	r.PUT("/admin/campaigns/{campaign_id}", s.route("admin_define", s.admin(s.handleDefine)))
	get("/admin/campaigns/{campaign_id}", s.route("admin_campaign", s.admin(s.handleCampaign)))
	get("/admin/campaigns", s.route("admin_campaigns", s.admin(s.handleCampaigns)))
	r.POST("/admin/campaigns/{campaign_id}/skus/{sku_id}/pause", s.route("admin_pause", s.admin(s.handlePause)))
	r.POST("/admin/campaigns/{campaign_id}/skus/{sku_id}/resume", s.route("admin_resume", s.admin(s.handleResume)))
	get("/admin/campaigns/{campaign_id}/skus/{sku_id}/audit", s.route("admin_audit", s.admin(s.handleAudit)))
	get("/admin/campaigns/{campaign_id}/audit", s.route("admin_campaign_audit", s.admin(s.handleCampaignAudit)))
	get("/admin/campaigns/{campaign_id}/skus/{sku_id}/refunds", s.route("admin_refunds", s.admin(s.handleRefunds)))
	r.POST("/admin/campaigns/{campaign_id}/skus/{sku_id}/snapshot", s.route("admin_snapshot", s.admin(s.handleSnapshot)))
	r.POST("/admin/reservations/{reservation_id}/release", s.route("admin_release", s.admin(s.handleRelease)))
	get("/admin/campaigns/{campaign_id}/skus/{sku_id}/events", s.route("admin_feed", s.admin(s.handleFeed)))
	get("/admin/campaigns/{campaign_id}/skus/{sku_id}/reservations", s.route("admin_export", s.admin(s.handleExport)))
	get("/admin/campaigns/{campaign_id}/events", s.route("admin_campaign_feed", s.admin(s.handleCampaignFeed)))
	get(statsPath, s.route("admin_stats", s.dashboardReader(s.handleStats)))
	get(statsStreamPath, s.route("admin_stats_stream", s.dashboardReader(s.handleStatsStream))) // HEAD: its headers, no stream
	s.dashboardRoutes(get)
	r.POST("/admin/dashboard/login-links", s.route("admin_dashboard_login_link", s.admin(s.handleLoginLink)))
	get(dashboardLoginPath, s.route("admin_dashboard_login", s.handleLogin)) // HEAD spends no code

	s.lotteryRoutes(r, get)

	get("/metrics", s.metricsHandler())
	get("/healthz", s.route("healthz", s.handleHealthz))
	get("/readyz", s.route("readyz", s.handleReadyz))
	get("/openapi.json", s.route("openapi", s.handleOpenAPI))
	return r, reserve
}

// routeKey is the user value that names the route being served, for the
// panic handler's metric.
const routeKey = "httpapi.route"

// routeMetrics are one route's request metrics: its duration histogram and
// its requests counters by outcome.
type routeMetrics struct {
	route    string
	name     any // route, boxed once for the request's user values
	duration *promhist.Histogram
	// known holds the counters of the outcomes known at start (a small,
	// fixed set; read-only after newRouteMetrics, so a lookup takes no
	// lock), in knownOutcomes' order, the route's commonest first: a scan
	// that compares lengths first finds ACCEPTED or SOLD_OUT for a few
	// instructions, where a map hashes the outcome first. others holds the
	// rest, made on first use.
	known    []outcomeCounter
	others   sync.Map // outcome -> prometheus.Counter
	requests *prometheus.CounterVec
}

func (s *Server) newRouteMetrics(name string) *routeMetrics {
	m := &routeMetrics{route: name, name: name, duration: s.metrics.duration.WithLabelValues(name),
		requests: s.metrics.requests}
	for _, outcome := range knownOutcomes(name) {
		m.known = append(m.known, outcomeCounter{outcome, s.metrics.requests.WithLabelValues(name, outcome)})
	}
	return m
}

// outcomeCounter is the requests counter of one outcome of a route.
type outcomeCounter struct {
	outcome string
	c       prometheus.Counter
}

// counter returns the requests counter of outcome.
func (m *routeMetrics) counter(outcome string) prometheus.Counter {
	for i := range m.known {
		if m.known[i].outcome == outcome {
			return m.known[i].c
		}
	}
	v, loaded := m.others.Load(outcome)
	if !loaded {
		v, _ = m.others.LoadOrStore(outcome, m.requests.WithLabelValues(m.route, outcome))
	}
	return v.(prometheus.Counter)
}

// done counts one request of the route that began at start and answered
// outcome, and returns how long it took.
func (m *routeMetrics) done(start time.Time, outcome string) time.Duration {
	took := time.Since(start)
	m.duration.Observe(took.Seconds())
	m.counter(outcome).Inc()
	return took
}

// route wraps the handler of a route, which returns its outcome label,
// with the request metrics; a query the route does not accept is refused
// first (badQuery).
func (s *Server) route(name string, h func(ctx *fasthttp.RequestCtx) string) fasthttp.RequestHandler {
	return s.counted(name, func(ctx *fasthttp.RequestCtx) string {
		if bad := badQuery(name, ctx.QueryArgs()); bad != "" {
			return write(ctx, errorReply(reasonBadRequest, bad))
		}
		return h(ctx)
	})
}

// counted wraps a handler that returns its outcome label with the request
// metrics: the router's own answers (404, 405, OPTIONS), whatever the
// query, and route's.
func (s *Server) counted(name string, h func(ctx *fasthttp.RequestCtx) string) fasthttp.RequestHandler {
	m := s.newRouteMetrics(name)
	return func(ctx *fasthttp.RequestCtx) {
		ctx.SetUserValue(routeKey, m.name)
		start := time.Now()
		m.done(start, h(ctx))
	}
}

// recoverPanic answers 500 INTERNAL for a handler that panicked; fasthttp
// itself would let the panic kill the process.
func (s *Server) recoverPanic(ctx *fasthttp.RequestCtx, v any) {
	name, _ := ctx.UserValue(routeKey).(string)
	if name == "" {
		name = "unknown"
	}
	s.panicked(ctx, name, v)
}

// panicked is recoverPanic for a panic in the route name.
func (s *Server) panicked(ctx *fasthttp.RequestCtx, name string, v any) {
	s.log.Error("handler panicked", "route", name, "method", string(ctx.Method()), "path", string(ctx.Path()), "panic", fmt.Sprint(v))
	ctx.Response.Reset()
	write(ctx, errorReply(reasonInternal, ""))
	s.metrics.requests.WithLabelValues(name, reasonInternal).Inc()
}

// parseError answers requests fasthttp could not read (ParseError) and
// counts the answer.
func (s *Server) parseError(ctx *fasthttp.RequestCtx, err error) {
	outcome := ParseError(ctx, err, s.bodyLimit(&ctx.Request.Header))
	s.metrics.requests.WithLabelValues("unparsed", outcome).Inc()
}

// expectContinue is fasthttp's ExpectHandler (ExpectContinue), counting a
// refusal as an unparsed request.
func (s *Server) expectContinue(ctx *fasthttp.RequestCtx) int {
	status := ExpectContinue(ctx, s.bodyLimit(&ctx.Request.Header))
	if status != fasthttp.StatusContinue {
		s.metrics.requests.WithLabelValues("unparsed", reasonBodyTooLarge).Inc()
	}
	return status
}

// Serve accepts connections on ln until Shutdown. It returns nil after
// Shutdown.
//
// Accept errors from descriptor or buffer exhaustion are waited out, not
// returned (see sheddingListener).
func (s *Server) Serve(ln net.Listener) error {
	s.runStats()
	shedding := sheddingListener{Listener: ln, onShed: func(err error) {
		s.log.Warn("accept failed for lack of resources; waiting", "err", err)
	}}
	refused := s.metrics.requests.WithLabelValues("connection_limit", ReasonUnavailable)
	limited := newConnLimiter(shedding, s.cfg.MaxConnections, refused.Inc)
	served := lingeringListener{Listener: limited, timeout: s.cfg.ReadTimeout}
	s.serving.Lock()
	if s.serving.shutdown {
		s.serving.Unlock()
		ln.Close()
		return nil
	}
	s.serving.listeners = append(s.serving.listeners, served)
	s.serving.Unlock()
	err := s.http.Serve(served)
	s.serving.Lock()
	defer s.serving.Unlock()
	if s.serving.shutdown {
		return nil
	}
	return err
}

// Shutdown stops accepting connections, closes idle ones and waits for the
// requests in flight to be answered, or for ctx. It does not close the
// engine: the caller does that afterwards (flush and fsync).
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.stopFeeds()
	s.stopStats()
	s.serving.Lock()
	s.serving.shutdown = true
	listeners := s.serving.listeners
	s.serving.Unlock()
	err := s.http.ShutdownWithContext(ctx)
	// fasthttp closes only the listeners its Serve has registered, and does
	// nothing at all before the first one: a Serve started just before
	// Shutdown would accept for ever. Closing them here too ends it (a
	// second close of one fasthttp closed fails harmlessly).
	for _, ln := range listeners {
		ln.Close()
	}
	return err
}
