package jsonkeys

import (
	"encoding/json"
	"errors"
	"testing"
)

type item struct {
	ID    string `json:"sku_id"`
	Limit int    `json:"sale_limit,omitempty"`
	Plain string
	Skip  string `json:"-"`
	quiet string // unexported: no key
}

type doc struct {
	Name  *string         `json:"name"`
	Items []item          `json:"items"`
	Extra map[string]item `json:"extra"`
	Any   any             `json:"any"`
	Raw   json.RawMessage `json:"raw"`
}

func TestCheckAccepts(t *testing.T) {
	for _, body := range []string{
		`{}`,
		`{"name":"n","items":[{"sku_id":"a","sale_limit":1,"Plain":"p"},{"sku_id":"b"}]}`,
		`{"na\u006de":"escaped key"}`,
		`{"extra":{"x":{"sku_id":"a"},"y":{"sku_id":"b"}}}`,
		`{"any":{"x":{"Whatever":1},"y":[{"a":1},{"a":2}]}}`,
		`{"raw":{"anything":1,"anything":2}}`, // json.RawMessage reads itself
		`{"name":null,"items":null}`,
	} {
		if err := Check([]byte(body), &doc{}); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}

func TestCheckRefuses(t *testing.T) {
	for body, want := range map[string]Error{
		`{"Name":"n"}`:                              {Key: "Name"},
		`{"NAME":"n"}`:                              {Key: "NAME"},
		`{"name":"a","name":"b"}`:                   {Key: "name", Repeated: true},
		`{"name":"a","na\u006de":"b"}`:              {Key: "name", Repeated: true},
		`{"items":[{"sku_id":"a"},{"SKU_ID":"b"}]}`: {Key: "SKU_ID", Path: "items[1]"},
		`{"items":[{"sku_id":"a","sku_id":"b"}]}`:   {Key: "sku_id", Repeated: true, Path: "items[0]"},
		`{"items":[],"items":[{"sku_id":"a"}]}`:     {Key: "items", Repeated: true},
		`{"items":[{"Skip":"x"}]}`:                  {Key: "Skip", Path: "items[0]"},
		`{"items":[{"plain":"x"}]}`:                 {Key: "plain", Path: "items[0]"},
		`{"items":[{"quiet":"x"}]}`:                 {Key: "quiet", Path: "items[0]"},
		`{"extra":{"x":{"sku_id":"a"},"x":{}}}`:     {Key: "x", Repeated: true, Path: "extra"},
		`{"extra":{"x":{"Sale_Limit":1}}}`:          {Key: "Sale_Limit", Path: "extra.x"},
		`{"any":[{"a":{"b":1,"b":2}}]}`:             {Key: "b", Repeated: true, Path: "any[0].a"},
		`{"unknown":1,"unknown":2}`:                 {Key: "unknown"},
	} {
		err := Check([]byte(body), &doc{})
		var got *Error
		if !errors.As(err, &got) || *got != want {
			t.Errorf("%s: %v, want %v", body, err, &want)
		}
	}
	if err := Check([]byte(`{"name":`), &doc{}); err == nil {
		t.Error("a truncated document passed")
	}
}

func TestErrorMessages(t *testing.T) {
	if got := (&Error{Key: "x"}).Error(); got != `unknown field "x"` {
		t.Error(got)
	}
	if got := (&Error{Key: "x", Repeated: true}).Error(); got != `field "x" repeated` {
		t.Error(got)
	}
	// Below the top, an unknown or repeated key says where its object is,
	// as a missing one does: in a list of thousands, "unknown field" alone
	// does not say which element to fix.
	if got := (&Error{Key: "x", Path: "skus[2]"}).Error(); got != `skus[2]: unknown field "x"` {
		t.Error(got)
	}
	if got := (&Error{Key: "x", Repeated: true, Path: "beacon"}).Error(); got != `beacon: field "x" repeated` {
		t.Error(got)
	}
}

type order struct {
	ID    string  `json:"order_id" jsonkeys:"required"`
	Note  string  `json:"note"`
	Lines []line  `json:"lines" jsonkeys:"required"`
	Payer *person `json:"payer"`
}

type line struct {
	SKU string `json:"sku_id" jsonkeys:"required"`
	N   int    `json:"n" jsonkeys:"required"`
}

type person struct {
	Name string `json:"name" jsonkeys:"required"`
}

// A field tagged required must be given (null too: its decoding judges
// it); the first one missing is named with where its object is.
func TestCheckRequired(t *testing.T) {
	for _, body := range []string{
		`{"order_id":"","lines":[]}`,
		`{"order_id":null,"lines":null,"payer":null}`,
		`{"lines":[{"sku_id":"a","n":0}],"order_id":"o","payer":{"name":""}}`,
	} {
		if err := Check([]byte(body), &order{}); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
	for body, want := range map[string]string{
		`{}`:                            "order_id is missing",
		`{"note":"x","lines":[]}`:       "order_id is missing",
		`{"order_id":"o"}`:              "lines is missing",
		`{"order_id":"o","lines":[{}]}`: "lines[0].sku_id is missing",
		`{"order_id":"o","lines":[{"sku_id":"a","n":1},{"sku_id":"b"}]}`: "lines[1].n is missing",
		`{"order_id":"o","lines":[],"payer":{}}`:                         "payer.name is missing",
		// An unknown or repeated key is found before a missing one.
		`{"order_id":"o","Lines":[]}`: `unknown field "Lines"`,
	} {
		err := Check([]byte(body), &order{})
		var e *Error
		if !errors.As(err, &e) || err.Error() != want {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}
