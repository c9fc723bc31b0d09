package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/seckill/seckill/client"
)

// A seckilld started on an older copy of its data dir keeps the history
// of the log it was copied from: once the copy has recorded past the
// sink's cursor, the feed takes that cursor, and its records up to it are
// not those the sink holds. The relay checks, when it resumes, that the
// feed holds the last message the sink holds of each SKU
// (client.CheckApplied, the owner of that check), and a mismatch takes
// the feed's own 409's path: the relay stops, and Reanchor stores the
// SKU's marker.

// holdings is a sink that says what it holds of each SKU (NATSSink).
type holdings interface {
	Applied(ctx context.Context) ([]client.Applied, error)
}

// checkHeld checks the last message sink holds of each SKU against the
// feed: nil, or client.CheckApplied's 409 CURSOR_DIVERGED *client.Error,
// or the error that kept it from checking. A sink that cannot say what it
// holds is not checked.
func checkHeld(ctx context.Context, c *client.Client, sink Sink) error {
	h, ok := sink.(holdings)
	if !ok {
		return nil
	}
	held, err := h.Applied(ctx)
	if err != nil {
		return fmt.Errorf("reading the sink's last message of each SKU: %w", err)
	}
	for _, a := range held {
		if err := c.CheckApplied(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// Applied returns, for each SKU the stream holds a message of, its last
// one (a SKU whose last message is a TypeReanchored marker has nothing to
// check: the relay resumes after it), with the SKU's earlier messages by
// stream sequence, for client.CheckApplied.
func (s *NATSSink) Applied(ctx context.Context) ([]client.Applied, error) {
	if err := s.find(ctx); err != nil || s.stream == nil {
		return nil, err
	}
	info, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(s.prefix()+".>"))
	if err != nil {
		return nil, err
	}
	tokens := map[string]bool{} // the SKUs' subject tokens
	for subject := range info.State.Subjects {
		token, _, _ := strings.Cut(strings.TrimPrefix(subject, s.prefix()+"."), ".")
		tokens[token] = true
	}
	var out []client.Applied
	for _, token := range slices.Sorted(maps.Keys(tokens)) {
		filter := s.prefix() + "." + token + ".>"
		m, err := s.stream.GetLastMsgForSubject(ctx, filter)
		if err != nil {
			return nil, fmt.Errorf("the last message of %s: %w", filter, err)
		}
		last, ok := storedEvent(m)
		if !ok || last.Type == TypeReanchored {
			continue // nothing of the feed's to check
		}
		out = append(out, client.Applied{CampaignID: s.campaign, SKUID: m.Header.Get(HeaderSKU), Last: last, LastAt: m.Sequence,
			From: func(ctx context.Context, p uint64) (client.Event, uint64, bool, error) {
				m, err := s.stream.GetMsg(ctx, max(p, 1), jetstream.WithGetMsgSubject(filter))
				if errors.Is(err, jetstream.ErrMsgNotFound) {
					return client.Event{}, 0, false, nil
				}
				if err != nil {
					return client.Event{}, 0, false, fmt.Errorf("the message of %s at or after %d: %w", filter, p, err)
				}
				e, _ := storedEvent(m) // a message that is none of the feed's counts as shared (CheckApplied)
				return e, m.Sequence, true, nil
			}})
	}
	return out, nil
}

// storedEvent decodes a message's event; ok is false for a message that
// is no relayed event (none a relay stores).
func storedEvent(m *jetstream.RawStreamMsg) (e client.Event, ok bool) {
	if json.Unmarshal(m.Data, &e) != nil || e.ID == "" || m.Header.Get(HeaderSKU) == "" {
		return client.Event{}, false
	}
	return e, true
}
