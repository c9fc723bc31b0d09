// Package httpapi is the HTTP service of seckill: it decodes and validates
// requests, runs them through the ingress layers of the design (per-user
// dedup, sold-out and campaign-window fast paths, admission by package
// admission's rule: stock, inbox age and commit latency), hands the survivors to the engine (one actor per SKU, a
// WAL fsync before every reply) and encodes the answers.
//
// It makes no domain decision: whether a reservation is accepted, paid,
// closed or refunded is decided by the engine (package actors, built on the
// pure state machine of actors/sku). The fast answers the ingress gives
// before the engine (NOT_STARTED, ENDED, PAUSED, SOLD_OUT) and the coarse
// SKU status are the sale gate's verdict (sku.Gate, the rule the engine's
// Machine.Reserve decides with), asked on the state the engine has
// published as durable (SKU stats): a fast answer is never more optimistic
// than the log. What httpapi adds is load: admission's permits, asked of
// package admission on the SKU's published load.
//
// Files, one idea each:
//
//	engine.go        the consumer-side engine interfaces (Reserver, StatsReader,
//	                 Admin: *actors.Engine; the fault tests put hooks in front
//	                 of it, faultengine_test.go) and the error mapping
//	server.go        Config (the engine and the optional features, Feed,
//	                 Lotteries, Claimer: nil answers their routes 404),
//	                 Server, routing, timeouts, panic recovery
//	fasthttplog.go   fasthttp's own log messages, bounded, into slog
//	respond.go       JSON answers (times in package internal/timefmt's one format)
//	decode.go        body decoding, its error details, id validation
//	reserve.go       the reserve pipeline (dedup, ingress, engine, encode)
//	reserve_codec.go the reserve body and 202 answer without reflection
//	reserveroute.go  reserves of known SKUs by their raw path, past the router
//	deadlines.go     the shared deadlines of reserve waits
//	dedup.go         per-user flights and the bounded answer cache
//	admission.go     the fast answers, per-SKU permits sized by package admission
//	status.go        the coarse SKU status: the sale gate's verdict and the load
//	reservations.go  get, lookup, pay, cancel
//	signature.go     HMAC of payment callbacks
//	admin.go         admin token and admin handlers
//	campaigns.go     campaign documents (admin body, campaign file, demo)
//	campaign_json.go the JSON form of a campaign document
//	health.go        /healthz, /readyz, /metrics
//	metrics.go       request and ingress metrics
//	collector.go     per-SKU gauges collected at scrape time
//	listener.go      connection shedding at the connection limit and on EMFILE
//	stats.go         /admin/stats and its Server-Sent Events stream
//	stats_doc.go     the JSON documents of the stats routes
//	stats_sampler.go the 1 Hz sample: rates from per-SKU counters, a minute of history
//	stats_ingress.go per-SKU counters of the reserve answers the ingress gives
//	stats_engine.go  ActivityReader: what the engine counts per SKU (actors.Activity)
//	dashboard.go     /admin/dashboard: the embedded page (package dashboard), its CSP
//	feed.go          the event feed of a SKU (package feed reads it): query
//	                 parameters, JSON pages, long polls, Server-Sent Events,
//	                 the status of each feed error
//	feed_campaign.go the campaign's merged feed
//	feed_export.go   the reservations export a feed consumer resynchronises from
//	feed_metrics.go  the feed's gauges (streams open, readers waiting)
//	feed_peer.go     a stream's check that its client closed
package httpapi
