// Package feed is seckill's event feed: every durable record of a SKU's log
// as a CloudEvents event, read by cursor, a SKU at a time or a campaign's
// SKUs merged, and the export a consumer resynchronises from. It owns what
// downstream systems see of the durable data: the events and their field
// names (seckillctl inspect renders records with them too), the event ids
// and cursors, the histories that keep ids unique across restores, the
// retention that holds a log's truncation back for consumers, and the
// reservation view. It decides nothing about a sale.
//
// It reads through two small interfaces, as NATS's consumers read a stream
// through StreamStore: Log, a SKU's durable records (*wal.Log; MemLog is its
// in-memory twin for tests), and Source, what the engine that runs the SKUs
// gives (*actors.Engine). Package httpapi serves it over HTTP: query
// parameters, JSON pages, long polls, Server-Sent Events, and the status of
// each error this package returns.
//
// Files, one idea each:
//
//	log.go          Log and Source, the feed's view of the log and the engine
//	memlog.go       MemLog, a Log in memory
//	feed.go         Feed, Params and a SKU's Reader: pages, long polls, the
//	                shared cache, the page's reservation look-ups
//	campaign.go     CampaignReader: a campaign's SKUs merged, the SKUs listed again
//	export.go       Export: a SKU's state as of a durable index, and its cursor
//	errors.go       the errors a consumer can act on
//	event.go        record -> CloudEvent (the public contract), EventType
//	event_json.go   the event's JSON without reflection, byte for byte json.Marshal's
//	cache.go        the encoded events and history chains shared by a SKU's readers
//	cursor.go       event ids, the campaign cursor (its two versions)
//	history.go      the histories of a SKU's log (HistoryFile), written by restores
//	retention.go    Retention: how far a snapshot may truncate a SKU's log
//	reservation.go  Reservation: a reservation's durable state, one rendering
package feed
