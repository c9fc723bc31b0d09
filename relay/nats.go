package relay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Message headers the NATS sink sets besides Nats-Msg-Id.
const (
	HeaderCursor = "Seckill-Cursor" // the campaign cursor as of the message
	HeaderIndex  = "Seckill-Index"  // the event's log index
	HeaderSKU    = "Seckill-Sku"    // the event's SKU id
)

// NATSSink publishes to a JetStream stream that holds this campaign's
// subjects only: seckill.{campaign}.{sku}.{type without "seckill."}, with
// "." in ids written "%2E" (ids are [A-Za-z0-9._:-]). One relay per
// stream: every publish expects the stream's last sequence to be the one
// before it (Nats-Expected-Last-Sequence), so a message can be stored only
// right after its predecessor; Nats-Msg-Id is the event id, so a publish
// stored whose ack was lost is not stored twice within the stream's
// duplicate window.
type NATSSink struct {
	js       jetstream.JetStream
	name     string
	campaign string
	stream   jetstream.Stream // nil until found or created
	lastSeq  uint64           // the stream's last sequence, as of Resume and the publishes since
}

// NewNATSSink returns the sink of the stream name, which Open creates
// (file storage, subjects seckill.{campaign}.>) if it does not exist.
func NewNATSSink(nc *nats.Conn, name, campaignID string) (*NATSSink, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	return &NATSSink{js: js, name: name, campaign: campaignID}, nil
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
		Name: s.name, Subjects: []string{"seckill." + subjectToken(s.campaign) + ".>"}, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return fmt.Errorf("creating stream %s: %w", s.name, err)
	}
	s.stream = stream
	return nil
}

// Subject returns the subject of an event.
func (s *NATSSink) Subject(skuID, eventType string) string {
	return "seckill." + subjectToken(s.campaign) + "." + subjectToken(skuID) + "." + strings.TrimPrefix(eventType, "seckill.")
}

// subjectToken writes an id as one subject token.
func subjectToken(id string) string { return strings.ReplaceAll(id, ".", "%2E") }

// Resume reads the stream's last message and returns its cursor: ""
// when the stream is empty or does not exist yet.
func (s *NATSSink) Resume(ctx context.Context) (string, error) {
	if err := s.find(ctx); err != nil {
		return "", err
	}
	if s.stream == nil {
		s.lastSeq = 0
		return "", nil
	}
	info, err := s.stream.Info(ctx)
	if err != nil {
		return "", err
	}
	s.lastSeq = info.State.LastSeq
	if info.State.Msgs == 0 {
		return "", nil
	}
	m, err := s.stream.GetMsg(ctx, info.State.LastSeq)
	if err != nil {
		return "", fmt.Errorf("the stream's last message %d: %w", info.State.LastSeq, err)
	}
	cursor := m.Header.Get(HeaderCursor)
	if cursor == "" {
		return "", fmt.Errorf("the stream's last message %d has no %s header: is the stream this relay's alone?", m.Sequence, HeaderCursor)
	}
	return cursor, nil
}

// Publish sends msgs asynchronously, each expecting the sequence of the
// one before, and waits for every ack.
func (s *NATSSink) Publish(ctx context.Context, msgs []Message) error {
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	for i, m := range msgs {
		msg := nats.NewMsg(s.Subject(m.SKUID, m.Type))
		msg.Data = m.Event
		msg.Header.Set(HeaderCursor, m.Cursor)
		msg.Header.Set(HeaderIndex, strconv.FormatUint(m.Index, 10))
		msg.Header.Set(HeaderSKU, m.SKUID)
		f, err := s.js.PublishMsgAsync(msg, jetstream.WithMsgID(m.ID), jetstream.WithExpectLastSequence(s.lastSeq+uint64(i)))
		if err != nil {
			return err
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case ack := <-f.Ok():
			if ack.Duplicate {
				return fmt.Errorf("message %s was already stored: the stream moved under the relay", f.Msg().Header.Get(jetstream.MsgIDHeader))
			}
			s.lastSeq = ack.Sequence
		case err := <-f.Err():
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
