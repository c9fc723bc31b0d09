package sku

import (
	"bytes"
	"errors"
	"testing"
)

func campaignScoped() Definition {
	return Definition{CampaignID: "c", SKUID: "s", StartAt: 0, EndAt: 1000, PaymentWindowMs: 10, SaleLimit: 3,
		ReleaseOnClose: true, PurchaseLimit: PurchaseLimitCampaign}
}

func TestPurchaseLimitSurvivesRecordAndState(t *testing.T) {
	d := campaignScoped()
	r := Record{Type: RecordDefine, At: 1, Def: d}
	got, err := DecodeRecord(RecordDefine, r.AppendPayload(nil))
	if err != nil || got.Def != d {
		t.Fatalf("DEFINE round trip: %+v, %v", got.Def, err)
	}
	m := New()
	if _, _, err := m.Define(1, d, nil); err != nil {
		t.Fatal(err)
	}
	if _, recs := m.Reserve(2, "r1", "u1", nil); len(recs) != 1 {
		t.Fatalf("reserve: %v", recs)
	}
	var buf bytes.Buffer
	if _, err := m.Freeze().Encode(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := DecodeState(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if back.Definition().PurchaseLimit != PurchaseLimitCampaign || back.Hash() != m.Hash() {
		t.Fatalf("restored limit %v, hashes equal %v", back.Definition().PurchaseLimit, back.Hash() == m.Hash())
	}
	// A SKU-scope state differs in hash: the section is part of the state.
	sd := d
	sd.PurchaseLimit = PurchaseLimitSKU
	o := New()
	if _, _, err := o.Define(1, sd, nil); err != nil {
		t.Fatal(err)
	}
	o.Reserve(2, "r1", "u1", nil)
	if o.Hash() == m.Hash() {
		t.Fatal("the purchase limit is not in the state hash")
	}
}

func TestPurchaseLimitRules(t *testing.T) {
	d := campaignScoped()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := d
	bad.PurchaseLimit = 2
	if err := bad.Validate(); !errors.Is(err, ErrInvalidDefinition) {
		t.Fatalf("limit 2: %v", err)
	}
	celled := d
	celled.Cell = "a"
	if err := celled.Validate(); !errors.Is(err, ErrInvalidDefinition) {
		t.Fatalf("celled: %v", err)
	}
	next := d
	next.PurchaseLimit = PurchaseLimitSKU
	if err := d.CheckRedefine(next); !errors.Is(err, ErrInvalidDefinition) {
		t.Fatalf("scope change: %v", err)
	}
	if err := next.CheckRedefine(d); !errors.Is(err, ErrInvalidDefinition) {
		t.Fatalf("scope change back: %v", err)
	}
	for _, in := range []string{"", "sku", "campaign"} {
		if p, ok := ParsePurchaseLimit(in); !ok || (in != "" && p.String() != in) {
			t.Fatalf("%q: %v %v", in, p, ok)
		}
	}
	if _, ok := ParsePurchaseLimit("user"); ok {
		t.Fatal(`"user" parsed`)
	}
	// A purchase group that says "sku" is not canonical.
	r := Record{Type: RecordDefine, At: 1, Def: d}
	p := r.AppendPayload(nil)
	p[len(p)-1] = 0
	if _, err := DecodeRecord(RecordDefine, p); !errors.Is(err, ErrBadRecord) {
		t.Fatalf("a purchase group of 0: %v", err)
	}
}
