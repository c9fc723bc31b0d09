package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/timefmt"
	"sigs.k8s.io/yaml"
)

// Campaign is a campaign document: the body of PUT /admin/campaigns/{c}
// and one element of the --campaigns file (JSON or YAML, same fields).
//
//	{"campaign_id":"demo","start_at":"2030-01-01T12:00:00Z","end_at":"2030-01-02T12:00:00Z",
//	 "payment_window":"15m","release_on_close":true,"skus":[{"sku_id":"sku-1","sale_limit":10000}]}
type Campaign struct {
	// CampaignID names the campaign ([A-Za-z0-9._:-], 1-64 characters).
	CampaignID string `json:"campaign_id"`
	// StartAt opens the sale window [start_at, end_at), RFC 3339 with a
	// UTC year from 1970 to 9999.
	StartAt time.Time `json:"start_at"`
	// EndAt closes the sale window; a redefinition may only move it later.
	EndAt time.Time `json:"end_at"`
	// PaymentWindow is how long a reservation waits for its payment, as a
	// Go duration from 1ms to 24h ("15m"); empty means 15m.
	PaymentWindow string `json:"payment_window,omitempty"`
	// ReleaseOnClose returns a closed unpaid reservation's token to the
	// pool; absent means true.
	ReleaseOnClose *bool `json:"release_on_close,omitempty"`
	// SKUs are the campaign's SKUs, each with its own token pool.
	SKUs []CampaignSKU `json:"skus"`
	// EntryPass says whether reserves need an entry pass and how the
	// issuing route hands them out; absent: passes are optional, lead and
	// ttl 10m.
	EntryPass *CampaignEntryPass `json:"entry_pass,omitempty"`
	// MaxUnpaidPerSubject caps, per SKU, the unpaid reservations whose
	// entry passes carry the same subject key; 0 or absent: no cap.
	MaxUnpaidPerSubject uint32 `json:"max_unpaid_per_subject,omitempty"`
	// PaymentWindowHighRisk is the payment window of a reservation made
	// with a pass of risk >= 1, a Go duration no longer than
	// payment_window; empty: payment_window.
	PaymentWindowHighRisk string `json:"payment_window_high_risk,omitempty"`
	// PurchaseLimit is the scope of the one-purchase-per-user rule:
	// "sku" (absent: one live purchase per SKU and user) or
	// "campaign" (one per campaign and user, over all its SKUs). Never
	// changes once defined.
	PurchaseLimit string `json:"purchase_limit,omitempty"`
}

// CampaignEntryPass is a campaign's entry_pass object.
type CampaignEntryPass struct {
	// Required refuses reserves without a pass (403 ENTRY_PASS_REQUIRED).
	Required bool `json:"required"`
	// Lead: passes are issued from start_at - lead (a Go duration, at
	// least 1ms, at most 24h; empty: 10m).
	Lead string `json:"lead,omitempty"`
	// TTL is an issued pass's lifetime after max(now, start_at) (at least
	// 1ms, at most 24h; empty: 10m).
	TTL string `json:"ttl,omitempty"`
}

// passFields returns the entry-pass fields of every SKU's definition.
func (c Campaign) passFields(window time.Duration) (rule sku.EntryPassRule, highRiskMs int64, err error) {
	if e := c.EntryPass; e != nil {
		rule.Required = e.Required
		for _, f := range [...]struct {
			name, text string
			dst        *int64
		}{{"entry_pass.lead", e.Lead, &rule.LeadMs}, {"entry_pass.ttl", e.TTL, &rule.TTLMs}} {
			if f.text == "" {
				continue
			}
			d, perr := time.ParseDuration(f.text)
			if perr != nil || d < time.Millisecond || d.Milliseconds() > sku.MaxEntryPassTTLMs {
				return rule, 0, &fieldError{field: f.name, want: `a duration from "1ms" to "24h", such as "10m"`}
			}
			*f.dst = d.Milliseconds()
		}
	}
	if c.PaymentWindowHighRisk != "" {
		d, perr := time.ParseDuration(c.PaymentWindowHighRisk)
		if perr != nil || d < time.Millisecond || d > window {
			return rule, 0, &fieldError{field: "payment_window_high_risk", want: `a duration from "1ms" to payment_window, such as "3m"`}
		}
		highRiskMs = d.Milliseconds()
	}
	return rule, highRiskMs, nil
}

// CampaignSKU is one SKU of a Campaign.
type CampaignSKU struct {
	// SKUID names the SKU within the campaign.
	SKUID string `json:"sku_id" jsonkeys:"required"`
	// SaleLimit is the number of tokens the campaign may sell.
	SaleLimit uint32 `json:"sale_limit" jsonkeys:"required"`
	// A lottery sale (lottery_campaign.go): "allocation":"lottery", the
	// entry window (RFC 3339), the beacon round, the waitlist (default
	// sale_limit) and optional tier quotas.
	Allocation     string          `json:"allocation,omitempty"`
	EntriesOpenAt  string          `json:"entries_open_at,omitempty"`
	EntriesCloseAt string          `json:"entries_close_at,omitempty"`
	Beacon         *BeaconJSON     `json:"beacon,omitempty"`
	Waitlist       *uint32         `json:"waitlist,omitempty"`
	Tiers          []TierQuotaJSON `json:"tiers,omitempty"`
}

// MaxCampaignFileSize bounds the campaign file read at start (bytes).
const MaxCampaignFileSize = 1 << 20

// Definitions turns the document into one sku.Definition per SKU, checking
// every field by the rules every definition meets (sku.Definition.Validate)
// and that no SKU appears twice. The rules only a new decision must meet
// (sku.Definition.ValidateNew: payment_window at most a day, ...) are
// checked against what the engine holds, by definitionsFor: a repeat of
// a SKU decided under older rules, which still replays, is no new
// decision.
func (c Campaign) Definitions() ([]sku.Definition, error) {
	switch {
	case c.StartAt.IsZero():
		return nil, missingField("start_at")
	case c.EndAt.IsZero():
		return nil, missingField("end_at")
	}
	window := time.Duration(sku.DefaultPaymentWindowMs) * time.Millisecond
	if c.PaymentWindow != "" {
		d, err := time.ParseDuration(c.PaymentWindow)
		if err != nil || d < time.Millisecond {
			return nil, paymentWindowError(nil)
		}
		window = d
	}
	release := true
	if c.ReleaseOnClose != nil {
		release = *c.ReleaseOnClose
	}
	if len(c.SKUs) == 0 {
		return nil, errors.New("skus must list at least one SKU")
	}
	rule, highRiskMs, err := c.passFields(window)
	if err != nil {
		return nil, err
	}
	limit, ok := sku.ParsePurchaseLimit(c.PurchaseLimit)
	if !ok {
		return nil, &fieldError{field: "purchase_limit", want: `"sku" or "campaign"`}
	}
	campaign := sku.Definition{
		CampaignID:      c.CampaignID,
		StartAt:         c.StartAt.UnixMilli(),
		EndAt:           c.EndAt.UnixMilli(),
		PaymentWindowMs: window.Milliseconds(),
		ReleaseOnClose:  release,

		EntryPass:               rule,
		MaxUnpaidPerSubject:     c.MaxUnpaidPerSubject,
		PaymentWindowHighRiskMs: highRiskMs,
		PurchaseLimit:           limit,
	}
	// The campaign's own fields first, on a definition whose SKU part is
	// a placeholder, so that an error of theirs names no SKU; then each
	// SKU's errors name it.
	placeholder := campaign
	placeholder.SKUID, placeholder.SaleLimit = "sku", 1
	if err := placeholder.Validate(); err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(c.SKUs))
	defs := make([]sku.Definition, 0, len(c.SKUs))
	for i, s := range c.SKUs {
		if seen[s.SKUID] {
			return nil, fmt.Errorf("skus[%d]: sku_id %q appears twice", i, s.SKUID)
		}
		seen[s.SKUID] = true
		if s.SaleLimit == 0 || s.SaleLimit > sku.MaxSaleLimit { // as a type error of sale_limit is named
			return nil, skuError(i, s.SKUID, &fieldError{field: "sale_limit", want: fieldRules["skus.sale_limit"]})
		}
		d := campaign
		d.SKUID, d.SaleLimit = s.SKUID, s.SaleLimit
		if err := s.lotteryRules(&d); err != nil {
			return nil, skuError(i, s.SKUID, err)
		}
		if err := d.Validate(); err != nil {
			return nil, skuError(i, s.SKUID, err)
		}
		defs = append(defs, d)
	}
	return defs, nil
}

// paymentWindowError refuses a payment_window out of its range, naming
// the range a new definition takes; cause is the engine's refusal, if it
// is one (sku.ErrInvalidDefinition, which a start-up tells from an error
// that a retry may cure).
func paymentWindowError(cause error) error {
	return &fieldError{field: "payment_window",
		want:  fmt.Sprintf(`a duration from "1ms" to %q, such as "15m" or "90s"`, timefmt.Duration(sku.MaxPaymentWindowMs)),
		cause: cause}
}

// definitionsFor is c's Definitions, each of which e does not hold as it
// is (a new SKU, or a change) checked by the rules of a new decision
// (sku.Definition.ValidateNew); one that repeats what e holds (Repeats)
// is no decision: Define records nothing for it, and a log decided under
// older rules must not stop a restart with the file that defined it.
func (c Campaign) definitionsFor(e Engine) ([]sku.Definition, error) {
	defs, err := c.Definitions()
	if err != nil {
		return nil, err
	}
	for i, d := range defs {
		if st, ok := e.SKUStats(d.CampaignID, d.SKUID); ok && d.Repeats(*st.Definition) {
			continue
		}
		if err := d.ValidateNew(); err != nil {
			if d.PaymentWindowMs > sku.MaxPaymentWindowMs { // a field of the campaign: named as Definitions names it
				return nil, paymentWindowError(err)
			}
			return nil, skuError(i, d.SKUID, err)
		}
	}
	return defs, nil
}

// skuError names the SKU at index i of skus (and its sku_id) in err, an
// error of its definition: a *fieldError of one of its fields as a type
// error in it is named (skuTypeError: "skus[2].entries_open_at (sku_id
// \"c3\"): must be ..."), any other error prefixed ("skus[2] (sku_id
// \"c3\"): a lottery SKU needs ...").
func skuError(i int, skuID string, err error) error {
	if f, ok := err.(*fieldError); ok && f.of == "" {
		return &fieldError{field: fmt.Sprintf("skus[%d].%s", i, f.field), of: fmt.Sprintf("sku_id %q", skuID), want: f.want, cause: f.cause}
	}
	return fmt.Errorf("skus[%d] (sku_id %q): %w", i, skuID, err)
}

// ParseCampaigns reads a list of campaign documents, JSON or YAML, by the
// rules of the admin body: an unknown, misspelled or repeated key is an
// error (a repeated YAML key too: YAMLToJSONStrict, not the last one
// silently), and so is any campaign that Definitions refuses, and a file
// of more than one YAML document (secondDocument).
func ParseCampaigns(data []byte) ([]Campaign, error) {
	if err := secondDocument(data); err != nil {
		return nil, fmt.Errorf("campaigns: %w", err)
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("campaigns: %w", err)
	}
	var cs []Campaign
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cs); err != nil {
		if explained := explainCampaigns(data, err); explained != nil {
			return nil, fmt.Errorf("campaigns: %w", explained)
		}
		if located := locateCampaignError(js); located != nil {
			return nil, located
		}
		return nil, fmt.Errorf("campaigns: a list of campaigns is expected: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("campaigns: data after the list")
	}
	ids := make(map[string]bool, len(cs))
	for i, c := range cs {
		if ids[c.CampaignID] {
			return nil, fmt.Errorf("campaigns: campaign_id %q appears twice", c.CampaignID)
		}
		ids[c.CampaignID] = true
		if _, err := c.Definitions(); err != nil {
			return nil, fmt.Errorf("campaigns[%d] (%q): %w", i, c.CampaignID, err)
		}
	}
	return cs, nil
}

// locateCampaignError names the campaign of a list (its index and
// campaign_id, as ParseCampaigns names a campaign Definitions refuses)
// whose document Campaign.UnmarshalJSON refuses (purchase_limit "" or
// null, a time that does not parse); nil when js is no list of objects
// or every one reads.
func locateCampaignError(js []byte) error {
	var docs []json.RawMessage
	if json.Unmarshal(js, &docs) != nil {
		return nil
	}
	for i, doc := range docs {
		var c Campaign
		err := json.Unmarshal(doc, &c)
		if err == nil {
			continue
		}
		var id struct {
			CampaignID string `json:"campaign_id"`
		}
		if json.Unmarshal(doc, &id) != nil {
			return nil // not an object: not a campaign to name
		}
		return fmt.Errorf("campaigns[%d] (%q): %w", i, id.CampaignID, err)
	}
	return nil
}

// LoadCampaigns reads and parses a campaign file (at most
// MaxCampaignFileSize bytes).
func LoadCampaigns(path string) ([]Campaign, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxCampaignFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxCampaignFileSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxCampaignFileSize)
	}
	cs, err := ParseCampaigns(data)
	if err != nil {
		return nil, fmt.Errorf("campaign file %s: %w", path, err)
	}
	return cs, nil
}

// DefineCampaigns defines every SKU of every campaign on the engine. A SKU
// already defined identically is left as it is; an allowed change (end_at
// later, sale_limit higher) is applied; anything else fails with an error
// wrapping sku.ErrInvalidDefinition, and new SKUs beyond the engine's limit
// with one wrapping actors.ErrTooManySKUs, before any SKU is defined. now
// is the caller's clock reading, on which a lottery's redefinition is
// judged (sku.CheckLotteryDefine).
func DefineCampaigns(ctx context.Context, e Engine, cs []Campaign, now time.Time) error {
	var all []sku.Definition
	for _, c := range cs {
		defs, err := c.definitionsFor(e)
		if err != nil {
			return fmt.Errorf("campaign %q: %w", c.CampaignID, err)
		}
		if err := checkRedefinitions(e, defs, now); err != nil {
			return err
		}
		all = append(all, defs...)
	}
	release, err := e.MakeRoom(all)
	if err != nil {
		return err
	}
	errs := e.DefineAll(ctx, all, 0)
	if i, err := firstFailure(errs); err != nil {
		release(cutShort(all, errs))
		return fmt.Errorf("defining %s/%s: %w", all[i].CampaignID, all[i].SKUID, err)
	}
	release(false)
	return nil
}

// keepPurchaseLimit says how a redefinition keeps the campaign's purchase
// limit: a document that leaves purchase_limit out means "sku".
func keepPurchaseLimit(current sku.PurchaseLimit) string {
	if current == sku.PurchaseLimitSKU {
		return `leave purchase_limit out (or "purchase_limit":"sku")`
	}
	return fmt.Sprintf(`repeat "purchase_limit":%q in every PUT of the campaign (a document that leaves it out means "sku")`, current.String())
}

// ApplyCampaignFile defines the campaigns of a campaign file at start-up,
// like DefineCampaigns, except that a SKU whose current definition is an
// allowed extension of the file's (an operator has since raised sale_limit
// or extended end_at through the admin API) keeps its larger definition: a
// restart with the same file must not fail. It returns the SKUs it kept.
func ApplyCampaignFile(ctx context.Context, e Engine, cs []Campaign, now time.Time) (kept []string, err error) {
	var apply []Campaign
	for _, c := range cs {
		defs, err := c.definitionsFor(e)
		if err != nil {
			return nil, fmt.Errorf("campaign %q: %w", c.CampaignID, err)
		}
		rest := c
		rest.SKUs = nil
		for i, d := range defs {
			if st, ok := e.SKUStats(d.CampaignID, d.SKUID); ok {
				cur := *st.Definition
				d.IDKey = cur.IDKey
				if cur != d && d.CheckRedefine(cur) == nil {
					kept = append(kept, d.CampaignID+"/"+d.SKUID)
					continue
				}
			}
			rest.SKUs = append(rest.SKUs, c.SKUs[i])
		}
		if len(rest.SKUs) > 0 {
			apply = append(apply, rest)
		}
	}
	return kept, DefineCampaigns(ctx, e, apply, now)
}

// checkRedefinitions refuses, before anything is applied, a definition the
// engine would refuse for a SKU it already has (the rule itself is
// sku.Definition.CheckRedefine), and a purchase_limit other than that of
// the campaign's SKUs already defined (sku.CheckCampaignPurchaseLimit,
// which the engine's Define asks too).
func checkRedefinitions(e Engine, defs []sku.Definition, now time.Time) error {
	for _, st := range e.AllStats() {
		for _, d := range defs {
			if err := sku.CheckCampaignPurchaseLimit(st.Definition, &d); err != nil {
				return fmt.Errorf("%w: %s", err, keepPurchaseLimit(st.Definition.PurchaseLimit))
			}
		}
	}
	for _, d := range defs {
		st, _ := e.SKUStats(d.CampaignID, d.SKUID) // the zero definition for a SKU not yet known
		cur := *st.Definition
		if cur == d {
			continue
		}
		if cur.CampaignID != "" {
			if err := cur.CheckRedefine(d); err != nil {
				return fmt.Errorf("%s/%s: %w", d.CampaignID, d.SKUID, err)
			}
		}
		if err := sku.CheckLotteryDefine(cur, st.LotteryDrawing, now.UnixMilli(), d); err != nil {
			return fmt.Errorf("%s/%s: %w", d.CampaignID, d.SKUID, err)
		}
	}
	return nil
}

// The demo campaign, defined on the first start when no campaign file is
// given.
const (
	// DemoCampaignID is the demo campaign's id.
	DemoCampaignID = "demo"
	// DemoSKUID is the demo campaign's only SKU.
	DemoSKUID = "sku-1"
	// DemoSaleLimit is the demo SKU's stock.
	DemoSaleLimit = 10_000
	// DemoDuration is how long the demo is open from its first start.
	DemoDuration = 24 * time.Hour
	// DemoPayment is the demo's payment window.
	DemoPayment = 15 * time.Minute
)

// DemoCampaign is the embedded demo: campaign "demo", SKU "sku-1", 10,000
// tokens, open from now for 24 h, payment window 15 m.
func DemoCampaign(now time.Time) Campaign {
	release := true
	start := now.UTC().Truncate(time.Millisecond)
	return Campaign{
		CampaignID:     DemoCampaignID,
		StartAt:        start,
		EndAt:          start.Add(DemoDuration),
		PaymentWindow:  DemoPayment.String(),
		ReleaseOnClose: &release,
		SKUs:           []CampaignSKU{{SKUID: DemoSKUID, SaleLimit: DemoSaleLimit}},
	}
}

// EnsureDemo defines the demo campaign on a first start only, that is when
// the data dir holds no SKU at all: a recovered demo keeps the window of its
// first start, and a data dir of other campaigns (a restored one, say) gets
// no demo sale. It reports whether it defined it.
func EnsureDemo(ctx context.Context, e Engine, now time.Time) (bool, error) {
	if len(e.AllStats()) > 0 { // not a first start: the data dir has SKUs (the demo or others)
		return false, nil
	}
	return true, DefineCampaigns(ctx, e, []Campaign{DemoCampaign(now)}, now)
}
