package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// EntryRequest is one entry into a lottery SKU's draw.
type EntryRequest struct {
	CampaignID string
	SKUID      string
	UserID     string
	// RequestID is the entry's idempotency key (kept for its retries);
	// empty: drawn, as Reserve does (unless EntryPass).
	RequestID string
	EntryPass string
}

// Entry is an entry as the server answers it (202 ENTERED, and its
// repeats: the same entry).
type Entry struct {
	Outcome     string `json:"outcome"`
	RequestID   string `json:"request_id"`
	EntrySeq    uint32 `json:"entry_seq"`
	Tier        uint8  `json:"tier"`
	Pseudonym   string `json:"pseudonym"`
	StatusURL   string `json:"status_url"`
	EvidenceURL string `json:"evidence_url"`
}

// Enter enters a lottery SKU's draw: the entry (a repeat, by request_id
// or by user, answers the same entry), or an *Error: ENTRIES_NOT_OPEN,
// ENTRIES_CLOSED, NOT_LOTTERY, ALREADY_ENTERED, ... Retried as Reserve is;
// a 504 is sent again (an entry is idempotent by its request_id and user).
func (c *Client) Enter(ctx context.Context, e EntryRequest) (*Entry, error) {
	if e.RequestID == "" && e.EntryPass == "" {
		e.RequestID = NewRequestID()
	}
	body := appendReserveBody(nil, e.RequestID, e.UserID, e.EntryPass)
	a, err := c.do(ctx, request{method: http.MethodPost, path: pathSKU(e.CampaignID, e.SKUID, "/entries"), body: body})
	if err != nil {
		return nil, err
	}
	var got Entry
	return &got, decode(a, &got, "enter")
}

// EntryStatus is an entry's state (GET .../entries/{request_id}):
// ENTERED before the draw, then WON (with its ReservationID), WAITLISTED
// (with its Position) or LOST.
type EntryStatus struct {
	Status        string `json:"status"`
	Position      int    `json:"position"`
	ReservationID string `json:"reservation_id"`
}

// EntryStatus reads an entry's state by its request_id.
func (c *Client) EntryStatus(ctx context.Context, campaignID, skuID, requestID string) (*EntryStatus, error) {
	a, err := c.do(ctx, request{method: http.MethodGet, path: pathSKU(campaignID, skuID, "/entries/"+url.PathEscape(requestID))})
	if err != nil {
		return nil, err
	}
	var got EntryStatus
	return &got, decode(a, &got, "entry status")
}

// Lottery reads a lottery SKU's public state and, once drawn, its
// evidence: Phase, and the answer as it came (the evidence an auditor
// checks, byte for byte).
func (c *Client) Lottery(ctx context.Context, campaignID, skuID string) (phase string, evidence json.RawMessage, err error) {
	a, err := c.do(ctx, request{method: http.MethodGet, path: pathSKU(campaignID, skuID, "/lottery")})
	if err != nil {
		return "", nil, err
	}
	var got struct {
		Phase string `json:"phase"`
	}
	return got.Phase, a.body, decode(a, &got, "lottery")
}

// Beacon is the public randomness a draw takes: its round, and its
// randomness (64 hex digits) or its signature (96 hex digits), or both.
type Beacon struct {
	Round      uint64 `json:"round"`
	Randomness string `json:"randomness,omitempty"`
	Signature  string `json:"signature,omitempty"`
}

// Draw starts a lottery SKU's draw (admin) with the beacon's randomness:
// nil once the inputs are recorded (the ranking follows: watch Lottery's
// phase), or an *Error: ENTRIES_OPEN, BEACON_NOT_DUE, ALREADY_DRAWN (409),
// BAD_BEACON, WRONG_ROUND (400).
func (c *Client) Draw(ctx context.Context, campaignID, skuID string, b Beacon) error {
	body, err := json.Marshal(struct {
		Beacon Beacon `json:"beacon"`
	}{b})
	if err != nil {
		return err
	}
	_, err = c.do(ctx, request{method: http.MethodPost, path: pathAdminSKU(campaignID, skuID) + "/lottery/draw", body: body, admin: true})
	return err
}

// LotteryEntries reads a drawn lottery's entries as CSV (admin): the pool
// an auditor ranks again.
func (c *Client) LotteryEntries(ctx context.Context, campaignID, skuID string) ([]byte, error) {
	a, err := c.do(ctx, request{method: http.MethodGet, path: pathAdminSKU(campaignID, skuID) + "/lottery/entries.csv", admin: true})
	if err != nil {
		return nil, err
	}
	return a.body, nil
}
