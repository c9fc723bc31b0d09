package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/seckill/seckill/httpapi/jsonkeys"
	"github.com/seckill/seckill/internal/timefmt"
)

// campaignJSON is the JSON form of a Campaign: the same fields, with
// start_at and end_at as text, so that a time that does not parse is
// reported with its field's name, and times are written in the API's one
// format. (Embedding Campaign's fields would put
// the embedded type's name into encoding/json's error paths.)
type campaignJSON struct {
	CampaignID     string        `json:"campaign_id"`
	StartAt        string        `json:"start_at" jsonkeys:"required"`
	EndAt          string        `json:"end_at" jsonkeys:"required"`
	PaymentWindow  string        `json:"payment_window,omitempty"`
	ReleaseOnClose *bool         `json:"release_on_close,omitempty"`
	SKUs           []CampaignSKU `json:"skus" jsonkeys:"required"`

	EntryPass             *CampaignEntryPass `json:"entry_pass,omitempty"`
	MaxUnpaidPerSubject   uint32             `json:"max_unpaid_per_subject,omitempty"`
	PaymentWindowHighRisk string             `json:"payment_window_high_risk,omitempty"`
	PurchaseLimit         string             `json:"purchase_limit,omitempty"`
}

// MarshalJSON writes a campaign document with its times as every answer
// of the API writes them (formatMillis: RFC 3339 in UTC, milliseconds, the
// resolution a definition keeps); a zero time is written "".
func (c Campaign) MarshalJSON() ([]byte, error) {
	return json.Marshal(campaignJSON{
		CampaignID:     c.CampaignID,
		StartAt:        formatCampaignTime(c.StartAt),
		EndAt:          formatCampaignTime(c.EndAt),
		PaymentWindow:  c.PaymentWindow,
		ReleaseOnClose: c.ReleaseOnClose,
		SKUs:           c.SKUs,

		EntryPass:             c.EntryPass,
		MaxUnpaidPerSubject:   c.MaxUnpaidPerSubject,
		PaymentWindowHighRisk: c.PaymentWindowHighRisk,
		PurchaseLimit:         c.PurchaseLimit,
	})
}

// formatCampaignTime is formatMillis of t, or "" for the zero time.
func formatCampaignTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return timefmt.Millis(t.UnixMilli())
}

// exampleTime shows the expected form of a time in error messages.
const exampleTime = "2030-01-01T12:00:00Z"

// UnmarshalJSON reads a campaign document. As in every body of the API,
// keys are spelled exactly as documented, at every level, none is unknown
// or repeated, and none tagged required is left out (jsonkeys.Check
// against campaignJSON, after the values are read: a bad value is named
// first); start_at and end_at are RFC 3339 strings ("" is not set, which
// Definitions refuses as missing).
func (c *Campaign) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		return nil
	}
	var doc campaignJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return skuTypeError(data, locateKey(data, &doc, err))
	}
	start, err := parseCampaignTime("start_at", doc.StartAt)
	if err != nil {
		return err
	}
	end, err := parseCampaignTime("end_at", doc.EndAt)
	if err != nil {
		return err
	}
	if err := jsonkeys.Check(data, &doc); err != nil {
		return err
	}
	if doc.PurchaseLimit == "" {
		// "" and null decode as absent would: only absence means "sku".
		var limit struct {
			PurchaseLimit json.RawMessage `json:"purchase_limit"` // "null" for null, nil when absent
		}
		if json.Unmarshal(data, &limit) == nil && limit.PurchaseLimit != nil {
			return &fieldError{field: "purchase_limit", want: `"sku" or "campaign"`}
		}
	}
	*c = Campaign{
		CampaignID:     doc.CampaignID,
		StartAt:        start,
		EndAt:          end,
		PaymentWindow:  doc.PaymentWindow,
		ReleaseOnClose: doc.ReleaseOnClose,
		SKUs:           doc.SKUs,

		EntryPass:             doc.EntryPass,
		MaxUnpaidPerSubject:   doc.MaxUnpaidPerSubject,
		PaymentWindowHighRisk: doc.PaymentWindowHighRisk,
		PurchaseLimit:         doc.PurchaseLimit,
	}
	return nil
}

// skuTypeError names the SKU whose value has the wrong type when err, the
// error of decoding the campaign document data, is such an error in skus
// (encoding/json names the field "skus.sale_limit", not which SKU): a
// *fieldError with the SKU's index in the path and its sku_id when that
// is a string ("skus[2].sale_limit (sku_id \"c3\"): must be an integer
// from 1 to 1073741824"), wrapping the SKU's own type error; a SKU that is
// no object is "skus[2]: must be an object". Any other error is returned
// as it is.
func skuTypeError(data []byte, err error) error {
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) || (typeErr.Field != "skus" && !strings.HasPrefix(typeErr.Field, "skus.")) {
		return err
	}
	var doc struct {
		SKUs []json.RawMessage `json:"skus"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return err
	}
	for i, raw := range doc.SKUs {
		var s CampaignSKU
		var inner *json.UnmarshalTypeError
		if !errors.As(json.Unmarshal(raw, &s), &inner) {
			continue
		}
		if inner.Field == "" { // the SKU itself: not an object
			return &fieldError{field: fmt.Sprintf("skus[%d]", i), want: jsonKind(inner), cause: inner}
		}
		f := &fieldError{field: fmt.Sprintf("skus[%d].%s", i, inner.Field), want: typeRule("skus."+inner.Field, inner), cause: inner}
		var id struct {
			SKUID any `json:"sku_id"`
		}
		if json.Unmarshal(raw, &id) == nil {
			if text, ok := id.SKUID.(string); ok {
				f.of = fmt.Sprintf("sku_id %q", text)
			}
		}
		return f
	}
	return err
}

// The years a campaign time may fall in, in UTC: from the Unix epoch
// (definitions keep Unix milliseconds) to the last year RFC 3339 can write
// (four digits). A time outside would be written back as something no
// RFC 3339 parser reads ("-0001-12-31T23:00:00.000Z").
const (
	minCampaignYear = 1970
	maxCampaignYear = 9999
)

// campaignTimeRange is the detail of a campaign time outside those years.
// It names the first and the last millisecond they hold: a definition keeps
// a time to the millisecond, so 9999-12-31T23:59:59.999Z is accepted, and
// a bound said to the second would refuse it in words only.
var campaignTimeRange = fmt.Sprintf("a time from %d-01-01T00:00:00.000Z to %d-12-31T23:59:59.999Z (UTC)",
	minCampaignYear, maxCampaignYear)

// parseCampaignTime reads an RFC 3339 time whose UTC year is from
// minCampaignYear to maxCampaignYear; "" is the zero time. Errors are a
// *fieldError naming field.
func parseCampaignTime(field, text string) (time.Time, error) {
	var t time.Time
	if text == "" {
		return t, nil
	}
	if err := t.UnmarshalText([]byte(text)); err != nil {
		return time.Time{}, &fieldError{field: field, want: "an RFC 3339 time such as " + exampleTime}
	}
	if y := t.UTC().Year(); y < minCampaignYear || y > maxCampaignYear {
		return time.Time{}, &fieldError{field: field, want: campaignTimeRange}
	}
	return t, nil
}
