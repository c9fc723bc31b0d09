package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// Campaign is a campaign's definition: the body of PUT
// /admin/campaigns/{c} and of its GET.
type Campaign struct {
	CampaignID string `json:"campaign_id"`
	// PurchaseLimit is "sku" (default) or "campaign".
	PurchaseLimit string `json:"purchase_limit,omitempty"`
	// StartAt, EndAt, PaymentWindow and ReleaseOnClose apply to every SKU
	// of a PUT; a GET gives them per SKU.
	StartAt        time.Time     `json:"-"`
	EndAt          time.Time     `json:"-"`
	PaymentWindow  time.Duration `json:"-"`
	ReleaseOnClose bool          `json:"-"`
	// EntryPassRequired makes every reserve carry an entry pass.
	EntryPassRequired bool          `json:"-"`
	SKUs              []CampaignSKU `json:"skus"`
}

// CampaignSKU is one SKU of a Campaign.
type CampaignSKU struct {
	SKUID          string `json:"sku_id"`
	SaleLimit      int64  `json:"sale_limit"`
	StartAt        string `json:"start_at,omitempty"`
	EndAt          string `json:"end_at,omitempty"`
	PaymentWindow  string `json:"payment_window,omitempty"`
	ReleaseOnClose bool   `json:"release_on_close,omitempty"`
	Paused         bool   `json:"paused,omitempty"`
	// Allocation is "lottery" for a lottery SKU (default: first come,
	// first served), with its entries' window, its beacon and its
	// waitlist (docs/lottery.md).
	Allocation     string          `json:"allocation,omitempty"`
	EntriesOpenAt  string          `json:"entries_open_at,omitempty"`
	EntriesCloseAt string          `json:"entries_close_at,omitempty"`
	Beacon         *CampaignBeacon `json:"beacon,omitempty"`
	Waitlist       int64           `json:"waitlist,omitempty"`
}

// CampaignBeacon names the public randomness a lottery SKU's draw takes.
type CampaignBeacon struct {
	Source string `json:"source"`
	Round  uint64 `json:"round"`
}

// PutCampaign defines or redefines a campaign (admin): redefining may
// only extend end_at or raise sale_limit (else a 409 DEFINITION_CONFLICT).
func (c *Client) PutCampaign(ctx context.Context, campaign Campaign) error {
	skus := make([]map[string]any, len(campaign.SKUs))
	for i, s := range campaign.SKUs {
		skus[i] = map[string]any{"sku_id": s.SKUID, "sale_limit": s.SaleLimit}
		for k, v := range map[string]string{"allocation": s.Allocation, "entries_open_at": s.EntriesOpenAt, "entries_close_at": s.EntriesCloseAt} {
			if v != "" {
				skus[i][k] = v
			}
		}
		if s.Beacon != nil {
			skus[i]["beacon"] = s.Beacon
		}
		if s.Waitlist != 0 {
			skus[i]["waitlist"] = s.Waitlist
		}
	}
	body := map[string]any{"campaign_id": campaign.CampaignID, "skus": skus,
		"start_at": campaign.StartAt.UTC().Format(time.RFC3339Nano), "end_at": campaign.EndAt.UTC().Format(time.RFC3339Nano),
		"release_on_close": campaign.ReleaseOnClose}
	if campaign.PaymentWindow > 0 {
		body["payment_window"] = campaign.PaymentWindow.String()
	}
	if campaign.EntryPassRequired {
		body["entry_pass"] = map[string]bool{"required": true}
	}
	if campaign.PurchaseLimit != "" {
		body["purchase_limit"] = campaign.PurchaseLimit
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, request{method: http.MethodPut, path: "/admin/campaigns/" + url.PathEscape(campaign.CampaignID), body: b, admin: true})
	return err
}

// Campaign reads a campaign's SKUs and their definitions (admin).
func (c *Client) Campaign(ctx context.Context, campaignID string) (*Campaign, error) {
	a, err := c.do(ctx, request{method: http.MethodGet, path: "/admin/campaigns/" + url.PathEscape(campaignID), admin: true})
	if err != nil {
		return nil, err
	}
	var got Campaign
	return &got, decode(a, &got, "campaign")
}

// Audit is a SKU's audit (admin): its counts and whether its invariants
// hold. SaleLimit = Available + Reserved + Confirmed on one node.
type Audit struct {
	CampaignID  string           `json:"campaign_id"`
	SKUID       string           `json:"sku_id"`
	SaleLimit   int64            `json:"sale_limit"`
	Available   int64            `json:"available"`
	Reserved    int64            `json:"reserved"`
	Confirmed   int64            `json:"confirmed"`
	States      map[string]int64 `json:"states"`
	Refunds     int64            `json:"refunds_required"`
	InvariantOK bool             `json:"invariant_ok"`
	Violations  []string         `json:"violations"`
	// Cell is a celled SKU's cell: its counts are this cell's share, and
	// Granted - Returned = Available + Reserved + Confirmed.
	Cell     string `json:"cell,omitempty"`
	Granted  int64  `json:"granted,omitempty"`
	Returned int64  `json:"returned,omitempty"`
}

// Audit recounts a SKU (admin). A recount that outlasts the request is
// retried after its Retry-After (503 AUDIT_PENDING) like any 503.
func (c *Client) Audit(ctx context.Context, campaignID, skuID string) (*Audit, error) {
	a, err := c.do(ctx, request{method: http.MethodGet, path: pathAdminSKU(campaignID, skuID) + "/audit", admin: true})
	if err != nil {
		return nil, err
	}
	var got Audit
	return &got, decode(a, &got, "audit")
}

// Refund is a payment seckill recorded for refund: one after the
// reservation closed, or a second payment_id on a paid one.
type Refund struct {
	ReservationID string    `json:"reservation_id"`
	PaymentID     string    `json:"payment_id"`
	Amount        int64     `json:"amount"`
	At            time.Time `json:"at"`
}

// Refunds lists a SKU's payments to refund (admin).
func (c *Client) Refunds(ctx context.Context, campaignID, skuID string) ([]Refund, error) {
	a, err := c.do(ctx, request{method: http.MethodGet, path: pathAdminSKU(campaignID, skuID) + "/refunds", admin: true})
	if err != nil {
		return nil, err
	}
	var got struct {
		Refunds []Refund `json:"refunds"`
	}
	return got.Refunds, decode(a, &got, "refunds")
}

// RouterMap reads the cell map a seckill-router routes a SKU's users by
// (GET /router/campaigns/{c}/skus/{s}, on a router only): its answer as it
// came, or an *Error (404 NOT_CELLED: no map yet).
func (c *Client) RouterMap(ctx context.Context, campaignID, skuID string) (json.RawMessage, error) {
	a, err := c.do(ctx, request{method: http.MethodGet, path: "/router/campaigns/" + url.PathEscape(campaignID) + "/skus/" + url.PathEscape(skuID)})
	if err != nil {
		return nil, err
	}
	return a.body, nil
}
