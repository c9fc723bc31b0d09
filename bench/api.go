package bench

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/timefmt"
)

// CampaignSpec is a campaign as the tool defines it (PUT
// /admin/campaigns/{campaign_id}, package client's Campaign).
type CampaignSpec struct {
	// CampaignID names the campaign; the tool makes a new one per run.
	CampaignID string `json:"campaign_id"`
	// StartAt is when reservations open (RFC 3339).
	StartAt string `json:"start_at"`
	// EndAt is when reservations close (RFC 3339).
	EndAt string `json:"end_at"`
	// PaymentWindow is how long a reservation waits for payment ("15m", "2s").
	PaymentWindow string `json:"payment_window"`
	// ReleaseOnClose returns a closed reservation's unit to available.
	ReleaseOnClose bool `json:"release_on_close"`
	// SKUs lists the SKUs and their sale limits.
	SKUs []SKUSpec `json:"skus"`
	// EntryPass, when set, is the campaign's entry_pass object: the tool
	// sets required when it sends passes, so no reserve goes without one.
	EntryPass *EntryPassSpec `json:"entry_pass,omitempty"`
}

// EntryPassSpec is a campaign's entry_pass object.
type EntryPassSpec struct {
	Required bool `json:"required"`
}

// SKUSpec is one SKU of a campaign.
type SKUSpec struct {
	// SKUID names the SKU.
	SKUID string `json:"sku_id"`
	// SaleLimit is the number of units the campaign may sell.
	SaleLimit int64 `json:"sale_limit"`
	// Lottery SKUs (the lottery scenario): the allocation and its rules.
	Allocation     string         `json:"allocation,omitempty"`
	EntriesOpenAt  string         `json:"entries_open_at,omitempty"`
	EntriesCloseAt string         `json:"entries_close_at,omitempty"`
	Beacon         *lotteryBeacon `json:"beacon,omitempty"`
	Waitlist       int64          `json:"waitlist,omitempty"`
}

// FormatTime renders a time the way the API writes them (timefmt.Layout);
// the server keeps times to the millisecond.
func FormatTime(t time.Time) string {
	return t.UTC().Format(timefmt.Layout)
}

// ParseTime reads a time from the API: timefmt.Layout, or any other RFC
// 3339 time.
func ParseTime(text string) (time.Time, error) {
	return time.Parse(time.RFC3339Nano, text)
}

// ReservationStatus is a reservation as GET /v1/reservations/{id} reads
// it, its times as the API writes them.
type ReservationStatus struct {
	// ReservationID names the reservation.
	ReservationID string `json:"reservation_id"`
	// RequestID is the request that created it.
	RequestID string `json:"request_id"`
	// UserID is its buyer.
	UserID string `json:"user_id"`
	// State is PENDING_PAYMENT, PAID or CLOSED.
	State string `json:"state"`
	// TokenID is its stock token.
	TokenID string `json:"token_id"`
	// ExpireAt is when it closes unless paid.
	ExpireAt string `json:"expire_at"`
	// PaidAt is set once paid.
	PaidAt string `json:"paid_at,omitempty"`
	// ClosedAt is set once closed.
	ClosedAt string `json:"closed_at,omitempty"`
	// ClosedReason says why it closed (expired, cancelled, ...).
	ClosedReason string `json:"closed_reason,omitempty"`
	// RefundRequired is set when a payment arrived after the close.
	RefundRequired bool `json:"refund_required,omitempty"`
	// Error is set on a non-200 answer.
	Error string `json:"error,omitempty"`
}

// AuditReport is the body of GET /admin/campaigns/{c}/skus/{s}/audit.
type AuditReport struct {
	// SaleLimit is the SKU's sale limit.
	SaleLimit int64 `json:"sale_limit"`
	// Available units may still be reserved.
	Available int64 `json:"available"`
	// Reserved units wait for payment.
	Reserved int64 `json:"reserved"`
	// Confirmed units are paid.
	Confirmed int64 `json:"confirmed"`
	// InvariantOK is the server's own check of sale_limit = available + reserved + confirmed.
	InvariantOK bool `json:"invariant_ok"`
	// Violations lists what the server found wrong, as it wrote it.
	Violations []json.RawMessage `json:"violations"`
	// Counts gives the number of reservations per state.
	Counts map[string]int64 `json:"counts"`
	// States is another name for Counts (seckilld writes "states").
	States map[string]int64 `json:"states"`
}

// StateCounts returns the reservations per state under either name.
func (a AuditReport) StateCounts() map[string]int64 {
	if len(a.Counts) > 0 {
		return a.Counts
	}
	return a.States
}

// PaymentRequest is the body of POST /v1/reservations/{id}/payment.
type PaymentRequest struct {
	// PaymentID identifies the payment; the same id again is the same payment.
	PaymentID string `json:"payment_id"`
	// Amount is optional.
	Amount int64 `json:"amount,omitempty"`
	// ReservationID names the reservation paid: a signed body is bound to it.
	ReservationID string `json:"reservation_id,omitempty"`
}

// StateAnswer is the body of an answer to payment or cancel.
type StateAnswer struct {
	// State is the reservation's state after the call (PAID, CLOSED).
	State string `json:"state"`
	// Error is the refusal code (REFUND_REQUIRED, PAYMENT_CONFLICT, ...).
	Error string `json:"error"`
}

// campaign is spec in package client's terms.
func (spec CampaignSpec) campaign() (client.Campaign, error) {
	c := client.Campaign{CampaignID: spec.CampaignID, ReleaseOnClose: spec.ReleaseOnClose, EntryPassRequired: spec.EntryPass != nil && spec.EntryPass.Required}
	var err error
	if c.StartAt, err = ParseTime(spec.StartAt); err != nil {
		return c, fmt.Errorf("start_at: %w", err)
	}
	if c.EndAt, err = ParseTime(spec.EndAt); err != nil {
		return c, fmt.Errorf("end_at: %w", err)
	}
	if c.PaymentWindow, err = time.ParseDuration(spec.PaymentWindow); err != nil {
		return c, fmt.Errorf("payment_window: %w", err)
	}
	for _, s := range spec.SKUs {
		sku := client.CampaignSKU{SKUID: s.SKUID, SaleLimit: s.SaleLimit, Allocation: s.Allocation, EntriesOpenAt: s.EntriesOpenAt,
			EntriesCloseAt: s.EntriesCloseAt, Waitlist: s.Waitlist}
		if s.Beacon != nil {
			sku.Beacon = &client.CampaignBeacon{Source: s.Beacon.Source, Round: s.Beacon.Round}
		}
		c.SKUs = append(c.SKUs, sku)
	}
	return c, nil
}
