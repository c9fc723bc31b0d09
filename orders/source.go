package orders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/relay"
)

// Source delivers a campaign's events in log order per SKU, from a
// cursor the order service keeps in PostgreSQL.
type Source interface {
	// Next returns the events after cursor (waiting a while for some:
	// none is an answer) and the cursor after them.
	Next(ctx context.Context, cursor string) (events []client.Event, next string, err error)
	// Name is the consumer's name in order_cursors.
	Name() string
}

// ErrPosition wraps a source's refusal of the cursor that a retry cannot
// pass (the feed's 409 CURSOR_DIVERGED, 400 BAD_CURSOR or
// CAMPAIGN_FEED_TOO_WIDE, 401, 404; a stream that does not hold the
// position): an operator decides. (The feed's 410 CURSOR_COMPACTED is
// resynchronised from the export: resync.go.)
var ErrPosition = errors.New("orders: the source refused the position")

// ErrNotDefined: the campaign is not defined yet (or its relay has not
// created its stream yet), and the consumer has read nothing of it. An order service is deployed before its sale: it
// waits (Run asks again every 100 ms).
var ErrNotDefined = errors.New("orders: the campaign is not defined yet")

// FeedSource reads a campaign's feed from seckilld (long polls); a SKU
// whose events the feed no longer holds is resynchronised from the export
// (Resync).
type FeedSource struct {
	Client     *client.Client
	CampaignID string
	// Cell, for a cell of a cluster, names the consumer of that cell's
	// feed (each cell logs its own share, under histories of its own).
	Cell string
	// Limit is the events per page (at most 1,000); Wait the long poll.
	Limit int
	Wait  time.Duration
}

// Name is "feed:<campaign>", or "feed:<campaign>@<cell>" for a cell.
func (f *FeedSource) Name() string {
	if f.Cell != "" {
		return "feed:" + f.CampaignID + "@" + f.Cell
	}
	return "feed:" + f.CampaignID
}

// Next reads one page of the campaign feed after cursor.
func (f *FeedSource) Next(ctx context.Context, cursor string) ([]client.Event, string, error) {
	page, err := f.Client.Feed(ctx, client.FeedRequest{CampaignID: f.CampaignID, After: cursor, Limit: f.Limit, Wait: f.Wait})
	if cursor == "" && errors.Is(err, client.ErrNotFound) {
		return nil, cursor, ErrNotDefined
	}
	if c, ok := asCompacted(err); ok {
		return nil, cursor, c
	}
	if d, ok := f.asDiverged(err); ok {
		return nil, cursor, d
	}
	if refused(err) {
		return nil, cursor, fmt.Errorf("%w: %w", ErrPosition, err)
	}
	if err != nil {
		return nil, cursor, err
	}
	if err := compactedStart(page.Events, cursor); err != nil {
		return nil, cursor, err
	}
	return page.Events, page.NextCursor, nil
}

// refused reports whether err is the feed's answer that a retry cannot
// get past, a 4xx but 429 QUEUE_FULL (401 a wrong token, 400 BAD_CURSOR,
// 404 a campaign or SKU seckilld does not have): an operator acts. Every
// read of the feed from a saved cursor (Next, and Check before it) judges
// its refusals by this one rule.
func refused(err error) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Status >= 400 && e.Status < 500 && e.Status != 429
}

// JetStreamSource reads the stream seckill-relay fills with one
// campaign's events (or one cell's share of them: relay.CellStream); the
// cursor is "<sequence>@<created>": the stream sequence of the last
// message applied and the stream's creation time (Unix nanoseconds), and
// "~<floors>" after a re-anchoring (floors). A
// stream deleted and created again under the same name numbers its
// messages from 1 again, in another order (the relay fills it from the
// feed anew), so a sequence of the old stream names nothing in it: a
// cursor of another creation is ErrPosition. (A cursor of a bare sequence,
// as saved before the creation was part of it, is taken as of the stream
// there is.) A stream not created yet is ErrNotDefined while nothing was
// read from it. A relay's relay.TypeReanchored message (a SKU restored to
// an earlier point) is a *Diverged: Run stops on it, and Reanchor goes on
// past it.
type JetStreamSource struct {
	Conn   *nats.Conn
	Stream string
	// Limit is the events per batch; Wait how long Next waits for a message.
	Limit int
	Wait  time.Duration

	it      jetstream.MessagesContext // open from seq, nil when none
	seq     uint64                    // the sequence of the last message taken from it
	created int64                     // the stream's creation (Unix ns) when it was opened
}

// Name is "jetstream:<stream>".
func (s *JetStreamSource) Name() string { return "jetstream:" + s.Stream }

// Next takes the messages after sequence cursor, up to Limit: the first
// waits up to Wait, and the rest are those the stream held beyond it when
// it was delivered (its pending count), so that a batch does not end
// wherever a loaded machine paused between two deliveries.
func (s *JetStreamSource) Next(ctx context.Context, cursor string) ([]client.Event, string, error) {
	after, created, floors, err := parseStreamCursor(cursor)
	if err != nil {
		return nil, cursor, err
	}
	if s.it == nil || s.seq != after || created != 0 && created != s.created {
		if err := s.open(ctx, after, created); err != nil {
			return nil, cursor, err
		}
	}
	var events []client.Event
	for pending := uint64(1); pending > 0 && len(events) < s.Limit; {
		wctx, cancel := context.WithTimeout(ctx, s.Wait)
		m, err := s.it.Next(jetstream.NextContext(wctx))
		cancel()
		if err != nil {
			if ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)) {
				break // nothing more for now
			}
			s.close()
			return nil, cursor, err
		}
		meta, err := m.Metadata()
		if err != nil {
			s.close()
			return nil, cursor, err
		}
		var e client.Event
		if err := json.Unmarshal(m.Data(), &e); err != nil {
			s.close()
			return nil, cursor, fmt.Errorf("%w: stream %s message %d is not a seckill event: %v", ErrPosition, s.Stream, meta.Sequence.Stream, err)
		}
		if e.Type == relay.TypeReanchored {
			// The messages before it are applied (or skipped) and the
			// cursor saved first; the next call opens at it again and
			// stops there, where Reanchor finds it.
			s.close()
			if s.seq != after {
				break
			}
			return nil, cursor, s.diverged(e, meta.Sequence.Stream)
		}
		s.seq, pending = meta.Sequence.Stream, meta.NumPending
		if floors.covers(e.ID) {
			continue
		}
		events = append(events, e)
	}
	if s.seq == after {
		return nil, cursor, nil
	}
	return events, formatStreamCursor(s.seq, s.created, floors), nil
}

// floors are the positions, by history, up to which a consumer of a
// stream skips a SKU's events: those a re-anchoring took the SKU from an
// export as of (Reanchor), which the stream holds after the relay's
// relay.TypeReanchored message too.
type floors map[string]string

// covers reports whether the event id is at or before its history's
// floor; an event past it drops the floor (the stream holds a history's
// events in log order).
func (f floors) covers(id string) bool {
	history, index, ok := strings.Cut(id, "-")
	floor, has := f[history]
	if !ok || !has {
		return false
	}
	_, at, _ := strings.Cut(floor, "-")
	if n, err := strconv.ParseUint(index, 10, 64); err == nil {
		if m, err := strconv.ParseUint(at, 10, 64); err == nil && n <= m {
			return true
		}
	}
	delete(f, history)
	return false
}

// formatStreamCursor writes "<sequence>@<created>", and "~<floors>" (a
// campaign cursor) when there are floors.
func formatStreamCursor(seq uint64, created int64, f floors) string {
	c := strconv.FormatUint(seq, 10) + "@" + strconv.FormatInt(created, 10)
	if len(f) > 0 {
		c += "~" + feed.CampaignCursor(f)
	}
	return c
}

// parseStreamCursor reads "<sequence>@<created>[~<floors>]" or a bare
// sequence (created 0: not checked); "" is the start of the stream.
func parseStreamCursor(cursor string) (after uint64, created int64, f floors, err error) {
	f = floors{}
	if cursor == "" {
		return 0, 0, f, nil
	}
	position, below, withFloors := strings.Cut(cursor, "~")
	seq, at, withCreated := strings.Cut(position, "@")
	after, err = strconv.ParseUint(seq, 10, 64)
	if err == nil && withCreated {
		created, err = strconv.ParseInt(at, 10, 64)
	}
	if err == nil && withFloors {
		f, err = feed.ParseCampaignCursor(below)
	}
	if err != nil || withCreated && created <= 0 || withFloors && len(f) == 0 {
		return 0, 0, nil, fmt.Errorf("%w: cursor %q is not a stream position (<sequence>@<created>[~<floors>])", ErrPosition, cursor)
	}
	return after, created, f, nil
}

// open starts an ordered consumer at the message after sequence after, of
// the stream created at created (Unix ns; 0: whichever there is).
func (s *JetStreamSource) open(ctx context.Context, after uint64, created int64) error {
	s.close()
	js, err := jetstream.New(s.Conn)
	if err != nil {
		return err
	}
	stream, err := js.Stream(ctx, s.Stream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound) && after == 0:
		// The relay creates its stream once the feed answers it.
		return fmt.Errorf("%w: stream %s: %v", ErrNotDefined, s.Stream, err)
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("%w: stream %s: %v", ErrPosition, s.Stream, err)
	}
	if err != nil {
		return err
	}
	// A new consumer (after 0) of a stream whose limits deleted its first
	// messages would start at the first one left and never learn the
	// sales before it: refused as a saved cursor's is.
	info := stream.CachedInfo()
	if at := info.Created.UnixNano(); created != 0 && at != created {
		return fmt.Errorf("%w: stream %s was created at %s, and the cursor (message %d) counts the messages of a stream created at %s: "+
			"a stream deleted and created again numbers other messages from 1; to read the new one from its start "+
			"(the events already applied are skipped by id), delete this consumer's cursor: DELETE FROM order_cursors WHERE consumer = '%s'",
			ErrPosition, s.Stream, info.Created.UTC().Format(time.RFC3339Nano), after, time.Unix(0, created).UTC().Format(time.RFC3339Nano), s.Name())
	}
	if first := info.State.FirstSeq; first > after+1 {
		return fmt.Errorf("%w: stream %s starts at message %d; the next to apply, %d, is gone (its limits deleted it)", ErrPosition, s.Stream, first, after+1)
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: after + 1})
	if err != nil {
		return err
	}
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	s.it, s.seq, s.created = it, after, info.Created.UnixNano()
	return nil
}

func (s *JetStreamSource) close() {
	if s.it != nil {
		s.it.Stop()
		s.it = nil
	}
}

// Close stops the consumer.
func (s *JetStreamSource) Close() { s.close() }

// diverged reads a relay's TypeReanchored message (at sequence seq) as a
// *Diverged: Run stops on it.
func (s *JetStreamSource) diverged(e client.Event, seq uint64) error {
	var d relay.ReanchoredData
	if err := json.Unmarshal(e.Data, &d); err != nil || d.SKUID == "" {
		return fmt.Errorf("%w: stream %s message %d is a %s without its SKU: %v", ErrPosition, s.Stream, seq, relay.TypeReanchored, err)
	}
	return &Diverged{CampaignID: d.CampaignID, SKUID: d.SKUID, ForkIndex: d.ForkIndex, History: d.History, Stream: s.Stream, Seq: seq}
}
