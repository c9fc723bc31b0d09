package feed

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A SKU feed's cursor is the id of the last event the consumer got:
// "<history>-<index>", the history of the record at that log index
// (Chain.At) and the index.

// eventID is the feed cursor of the record at index in history: the event
// id. "<history>-<index>", e.g. "3f2a9c0d1b4e5f60-1042".
func eventID(history string, index uint64) string {
	return history + "-" + strconv.FormatUint(index, 10)
}

// parseCursor splits an event id "<history>-<index>".
func parseCursor(cursor string) (string, uint64, error) {
	h, idx, ok := strings.Cut(cursor, "-")
	if !ok || len(h) != 16 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", 0, fmt.Errorf("malformed cursor %q: want <16 hex digits>-<index>", cursor)
	}
	index, err := strconv.ParseUint(idx, 10, 64)
	if err != nil || index == 0 {
		return "", 0, fmt.Errorf("malformed cursor %q: bad index", cursor)
	}
	return h, index, nil
}

// indexOf returns the index of a valid event id.
func indexOf(eventID string) uint64 {
	_, index, _ := parseCursor(eventID)
	return index
}

// The campaign cursor, version 1 (base64url without padding of):
//
//	byte 0      campaignCursorV1 (0x01)
//	then, per SKU position, sorted by history then index:
//	  8 bytes   the history id of the SKU's last event (its 16 hex digits as bytes)
//	  uvarint   the log index of that event (≥ 1)
//
// The SKU ids are not in it: a history id names one SKU's log (it is
// derived from the SKU's secret reservation id key, or drawn at a restore),
// so the server finds each position's SKU among the campaign's SKUs'
// histories. A position therefore costs 9-18 bytes whatever the length of
// the SKU id, and a consumer can build a cursor from event ids alone
// (CampaignCursor). Histories are not shared between SKUs, so each
// position carries its own.
//
// Version 0 is base64url of a JSON object {"<sku_id>":"<event id>",...},
// which the feed handed out before: its first byte is '{', and the feed
// still accepts it.
const (
	campaignCursorV1 = 0x01
	// CampaignCursorMaxBytes bounds the campaign cursor, so that a
	// request carrying it twice fits fasthttp's read buffer (4 KiB: the
	// request line and headers) with 1 KiB to spare for the rest of the
	// request: a browser's EventSource opened with ?after= sends, when it
	// reconnects, the same URL and the last id: as Last-Event-ID. A
	// campaign whose widest cursor would exceed it is refused with 400
	// CAMPAIGN_FEED_TOO_WIDE.
	CampaignCursorMaxBytes = (4096 - 1024) / 2
	// campaignPositionMaxBytes is the width of one position assumed by
	// the bound: a history id and an index below 2^35 (34 billion records
	// in one SKU's log). A wider actual cursor is refused at run time too.
	campaignPositionMaxBytes = 8 + 5
	// CampaignFeedMaxSKUs is the most SKUs a campaign's feed serves: the
	// widest cursor of that many SKUs fits CampaignCursorMaxBytes.
	CampaignFeedMaxSKUs = (CampaignCursorMaxBytes*3/4 - 1) / campaignPositionMaxBytes
)

// CampaignCursor encodes the position of a campaign feed consumer (format
// version 1, above): the event id of the last event it got of each SKU,
// the values of positions (the keys, a SKU id or a history, are not
// encoded). A SKU without a position is read from the start of its
// retained log. The feed returns it as next_cursor and as each SSE id:;
// consumers may build one (a relay does, per event). Event ids that are
// not "<16 hex digits>-<index>" are left out (the feed never sends one).
func CampaignCursor(positions map[string]string) string {
	if len(positions) == 0 {
		return ""
	}
	type position struct {
		history [8]byte
		index   uint64
	}
	ps := make([]position, 0, len(positions))
	for _, id := range positions {
		h, index, err := parseCursor(id)
		if err != nil {
			continue
		}
		var p position
		hex.Decode(p.history[:], []byte(h)) // parseCursor checked the digits
		p.index = index
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b position) int {
		if c := bytes.Compare(a.history[:], b.history[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.index, b.index) // one history twice: a stale position of a consumer's
	})
	b := make([]byte, 1, 1+len(ps)*(8+binary.MaxVarintLen64))
	b[0] = campaignCursorV1
	for _, p := range ps {
		b = append(b, p.history[:]...)
		b = binary.AppendUvarint(b, p.index)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseCampaignCursor decodes a campaign cursor of either version ("" is
// the empty position) into its positions: the event id of each, keyed by
// its history. Of two positions with one history (a consumer's cursor may
// hold them), the later one is kept.
func ParseCampaignCursor(cursor string) (map[string]string, error) {
	positions := map[string]string{}
	if cursor == "" {
		return positions, nil
	}
	if _, _, err := parseCursor(cursor); err == nil { // never a campaign cursor: version 1 starts with "A", version 0 with "ey"
		return nil, fmt.Errorf("malformed campaign cursor: %q is an event id, which resumes one SKU's feed "+
			"(/admin/campaigns/{c}/skus/{s}/events); the campaign's feed resumes from a campaign cursor: a page's next_cursor, "+
			"the id: of its stream, or feed.CampaignCursor of the events' ids", cursor)
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, fmt.Errorf("malformed campaign cursor: %v", err)
	}
	keep := func(id string) error {
		h, index, err := parseCursor(id)
		if err != nil {
			return err
		}
		if old, ok := positions[h]; ok {
			if _, oldIndex, _ := parseCursor(old); oldIndex > index {
				return nil
			}
		}
		positions[h] = id
		return nil
	}
	switch {
	case len(b) > 0 && b[0] == '{': // version 0
		var v0 map[string]string
		if err := json.Unmarshal(b, &v0); err != nil {
			return nil, fmt.Errorf("malformed campaign cursor: %v", err)
		}
		for _, id := range v0 {
			if err := keep(id); err != nil {
				return nil, fmt.Errorf("malformed campaign cursor: %v", err)
			}
		}
	case len(b) > 0 && b[0] == campaignCursorV1:
		for rest := b[1:]; len(rest) > 0; {
			index, n := uint64(0), 0
			if len(rest) > 8 {
				index, n = binary.Uvarint(rest[8:])
			}
			if n <= 0 || index == 0 {
				return nil, errors.New("malformed campaign cursor: a truncated position, or index 0")
			}
			if err := keep(eventID(hex.EncodeToString(rest[:8]), index)); err != nil {
				return nil, fmt.Errorf("malformed campaign cursor: %v", err)
			}
			rest = rest[8+n:]
		}
	default:
		return nil, errors.New("malformed campaign cursor: unknown version")
	}
	return positions, nil
}
