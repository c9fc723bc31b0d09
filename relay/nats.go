package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Message headers the NATS sink sets besides Nats-Msg-Id.
const (
	HeaderCursor = "Seckill-Cursor" // the campaign cursor as of the message
	HeaderIndex  = "Seckill-Index"  // the event's log index
	HeaderSKU    = "Seckill-Sku"    // the event's SKU id
)

// NATSSink publishes to a JetStream stream that holds one campaign's
// subjects only: seckill.{campaign}.{sku}.{type without "seckill."}, or,
// for a cell of a cluster, seckill.{campaign}.@{cell}.{sku}.{type} in the
// cell's own stream (CellStream): each cell logs its own share of the
// campaign, and two relays may not share a stream (below), nor two streams
// a subject. "." in ids is written "%2E" (ids are [A-Za-z0-9._:-], so the
// "@" token of a cell is never a SKU's). One relay per stream: every
// publish expects the stream's last sequence to be the one before it
// (Nats-Expected-Last-Sequence), so a message can be stored only right
// after its predecessor; Nats-Msg-Id is the event id (unique across cells
// too: a cell's log histories are its own), so a publish stored whose ack
// was lost is not stored twice within the stream's duplicate window (but
// for an older copy's event re-using an abandoned one's id: Publish).
type NATSSink struct {
	js       jetstream.JetStream
	name     string
	campaign string
	cell     string           // "" for a lone seckilld
	stream   jetstream.Stream // nil until found or created
	lastSeq  uint64           // the stream's last sequence, as of Resume and the publishes since
	created  time.Time        // the stream's creation, as of Resume (or Open)

	kv          jetstream.KeyValue // ProgressBucket, nil until found or created
	progressRev uint64             // the revision of the stream's progress key as last read or written; 0: none
}

// NewNATSSink returns the sink of the stream name, which Open creates
// (file storage, subjects seckill.{campaign}.>) if it does not exist.
func NewNATSSink(nc *nats.Conn, name, campaignID string) (*NATSSink, error) {
	return NewCellNATSSink(nc, name, campaignID, "")
}

// NewCellNATSSink is NewNATSSink for the feed of cell (a cell of a
// cluster; "" for a lone seckilld): its stream is CellStream(name, cell),
// with subjects seckill.{campaign}.@{cell}.>.
func NewCellNATSSink(nc *nats.Conn, name, campaignID, cell string) (*NATSSink, error) {
	if err := CheckStreamName(name); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	return &NATSSink{js: js, name: CellStream(name, cell), campaign: campaignID, cell: cell}, nil
}

// ErrStreamName: the stream name is not one NATS accepts. The relay
// refuses it at start: JetStream would refuse every attempt to find or
// create the stream, and the relay, taking that for NATS being away, would
// retry it forever.
var ErrStreamName = errors.New("relay: invalid stream name")

// CheckStreamName applies NATS's rule for stream names: not empty, and no
// whitespace, ".", "*", ">", "/", "\\" or non-printable character.
func CheckStreamName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty", ErrStreamName)
	}
	for _, r := range name {
		if strings.ContainsRune(".*>/\\", r) || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return fmt.Errorf("%w %q: a NATS stream name has no whitespace, \".\", \"*\", \">\", \"/\", \"\\\\\" or non-printable character", ErrStreamName, name)
		}
	}
	return nil
}

// CellStream names the stream of cell's events: name_{cell} ("." in the
// cell id written "%2E", as stream names take no "."), or name itself for
// a lone seckilld (cell ""). A consumer of a cluster finds each cell's
// stream by it.
func CellStream(name, cell string) string {
	if cell == "" {
		return name
	}
	return name + "_" + subjectToken(cell)
}

// Stream returns the name of the sink's stream.
func (s *NATSSink) Stream() string { return s.name }

// prefix is the subjects' common beginning: seckill.{campaign}, and
// .@{cell} for a cell.
func (s *NATSSink) prefix() string {
	p := "seckill." + subjectToken(s.campaign)
	if s.cell != "" {
		p += ".@" + subjectToken(s.cell)
	}
	return p
}

// find looks the stream up; a missing stream leaves s.stream nil.
func (s *NATSSink) find(ctx context.Context) error {
	if s.stream != nil {
		return nil
	}
	stream, err := s.js.Stream(ctx, s.name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("stream %s: %w", s.name, err)
	}
	s.stream = stream
	return nil
}

// Open creates the stream if it does not exist.
func (s *NATSSink) Open(ctx context.Context) error {
	if err := s.find(ctx); err != nil || s.stream != nil {
		return err
	}
	stream, err := s.js.CreateStream(ctx, jetstream.StreamConfig{
		Name: s.name, Subjects: []string{s.prefix() + ".>"}, Storage: jetstream.FileStorage,
	})
	var refused jetstream.JetStreamError
	if errors.As(err, &refused) && refused.APIError() != nil && refused.APIError().Code == 400 {
		// A request JetStream will refuse again (its subjects held by
		// another stream: a second stream for the campaign).
		return fmt.Errorf("%w: creating stream %s with subjects %s.>: %v (give the stream this campaign's subjects only, and each campaign or cell one stream)",
			ErrSinkRefused, s.name, s.prefix(), err)
	}
	if err != nil {
		return fmt.Errorf("creating stream %s: %w", s.name, err)
	}
	s.stream = stream
	s.created = stream.CachedInfo().Created
	return nil
}

// Subject returns the subject of an event.
func (s *NATSSink) Subject(skuID, eventType string) string {
	return s.prefix() + "." + subjectToken(skuID) + "." + strings.TrimPrefix(eventType, "seckill.")
}

// subjectToken writes an id as one subject token.
func subjectToken(id string) string { return strings.ReplaceAll(id, ".", "%2E") }

// Resume returns the cursor the relay goes on from: the progress Advance
// recorded while the stream's last sequence is still the one it recorded
// it at, else the cursor of the stream's last message; "" when the stream
// is empty or does not exist yet.
func (s *NATSSink) Resume(ctx context.Context) (string, error) {
	if err := s.find(ctx); err != nil {
		return "", err
	}
	s.kv, s.progressRev = nil, 0
	if s.stream == nil {
		// A key left by a stream deleted since is read for its revision.
		s.lastSeq, s.created = 0, time.Time{}
		_, err := s.readProgress(ctx, nil)
		return "", err
	}
	info, err := s.stream.Info(ctx)
	if err != nil {
		return "", err
	}
	s.lastSeq, s.created = info.State.LastSeq, info.Created
	if cursor, err := s.readProgress(ctx, info); err != nil || cursor != "" {
		return cursor, err
	}
	if info.State.Msgs == 0 {
		return "", nil
	}
	m, err := s.stream.GetMsg(ctx, info.State.LastSeq)
	if err != nil {
		return "", fmt.Errorf("the stream's last message %d: %w", info.State.LastSeq, err)
	}
	cursor := m.Header.Get(HeaderCursor)
	if cursor == "" {
		return "", fmt.Errorf("%w: the stream's last message %d has no %s header: is the stream this relay's alone?", ErrSinkRefused, m.Sequence, HeaderCursor)
	}
	return cursor, nil
}

// Publish sends msgs asynchronously, each expecting the sequence of the
// one before, and waits for every ack. A message JetStream takes for a
// duplicate of a stored message that is another record (a seckilld on an
// older copy of its data dir re-uses the ids of the abandoned events the
// stream holds, within the stream's duplicate window) is sent again
// without Nats-Msg-Id: the expected last sequence alone keeps it from
// being stored twice, and waiting out the window would hold the relay
// back for minutes after a re-anchoring.
func (s *NATSSink) Publish(ctx context.Context, msgs []Message) error {
	bare := false // msgs[0] goes without Nats-Msg-Id
	for len(msgs) > 0 {
		stored, dup, err := s.publish(ctx, msgs, bare)
		msgs = msgs[stored:]
		if err != nil || dup == nil {
			return err
		}
		if bare && stored == 0 {
			return fmt.Errorf("message %s sent without %s was taken for a duplicate", msgs[0].ID, jetstream.MsgIDHeader)
		}
		if err := s.find(ctx); err != nil || s.stream == nil {
			return fmt.Errorf("finding the message %d that message %s duplicates: stream %s: %v", dup.Sequence, msgs[0].ID, s.name, err)
		}
		original, err := s.stream.GetMsg(ctx, dup.Sequence)
		if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return fmt.Errorf("the message %d that message %s duplicates: %w", dup.Sequence, msgs[0].ID, err)
		}
		if err == nil && bytes.Equal(original.Data, msgs[0].Event) {
			return fmt.Errorf("message %s was already stored (sequence %d): the stream moved under the relay", msgs[0].ID, dup.Sequence)
		}
		bare = true
	}
	return nil
}

// publish sends msgs (msgs[0] without Nats-Msg-Id when bare) and returns
// how many were stored, in order, before the first one that was not: dup
// is its ack when JetStream took it for a duplicate (the later ones, which
// expected it stored, have all been answered), else err says why.
func (s *NATSSink) publish(ctx context.Context, msgs []Message, bare bool) (stored int, dup *jetstream.PubAck, err error) {
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	for i, m := range msgs {
		msg := nats.NewMsg(s.Subject(m.SKUID, m.Type))
		msg.Data = m.Event
		msg.Header.Set(HeaderCursor, m.Cursor)
		msg.Header.Set(HeaderIndex, strconv.FormatUint(m.Index, 10))
		msg.Header.Set(HeaderSKU, m.SKUID)
		opts := []jetstream.PublishOpt{jetstream.WithExpectLastSequence(s.lastSeq + uint64(i))}
		if i > 0 || !bare {
			opts = append(opts, jetstream.WithMsgID(m.ID))
		}
		f, err := s.js.PublishMsgAsync(msg, opts...)
		if err != nil {
			return stored, nil, err
		}
		futures = append(futures, f)
	}
	for i, f := range futures {
		select {
		case ack := <-f.Ok():
			if !ack.Duplicate {
				s.lastSeq = ack.Sequence
				stored++
				continue
			}
			for _, later := range futures[i+1:] {
				select {
				case <-later.Ok():
					return stored, nil, fmt.Errorf("message %s was stored after one taken for a duplicate", later.Msg().Header.Get(jetstream.MsgIDHeader))
				case <-later.Err():
				case <-ctx.Done():
					return stored, nil, ctx.Err()
				}
			}
			return stored, ack, nil
		case err := <-f.Err():
			return stored, nil, err
		case <-ctx.Done():
			return stored, nil, ctx.Err()
		}
	}
	return stored, nil, nil
}
