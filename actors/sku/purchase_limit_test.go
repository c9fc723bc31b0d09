package sku

import (
	"bytes"
	"errors"
	"strings"
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
	celled.Cell, celled.CellMapVersion = "a", 1
	if err := celled.Validate(); err != nil {
		t.Fatalf("celled with campaign scope (routed by campaign and user): %v", err)
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

// One campaign, one purchase_limit: a definition may stand beside a SKU
// of another campaign, an undefined one, or one of the same scope; beside
// another scope of its campaign (another SKU or itself) it is refused,
// naming the SKU and both scopes.
func TestCheckCampaignPurchaseLimit(t *testing.T) {
	next := campaignScoped()
	other := next
	other.SKUID = "t"
	otherCampaign := other
	otherCampaign.CampaignID, otherCampaign.PurchaseLimit = "d", PurchaseLimitSKU
	for name, defined := range map[string]Definition{"same scope": other, "another campaign": otherCampaign, "not defined": {}} {
		if err := CheckCampaignPurchaseLimit(&defined, &next); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	other.PurchaseLimit = PurchaseLimitSKU
	itself := next
	itself.PurchaseLimit = PurchaseLimitSKU
	for name, defined := range map[string]Definition{"another SKU": other, "the SKU itself": itself} {
		err := CheckCampaignPurchaseLimit(&defined, &next)
		want := `purchase_limit "campaign", but SKU ` + defined.SKUID + ` of campaign c has "sku"`
		if !errors.Is(err, ErrInvalidDefinition) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}

// TestCelledCampaignScopeRoundTrips: a celled SKU of a campaign-scope
// campaign writes its DEFINE with the cell group
// (its cell, not empty) then the purchase group, and decodes to the same
// definition; its state ends with the cell section (tag 3) then the
// purchase section (tag 5), and decodes to the same state and hash. The
// purchase section before the cell section, twice, or with a byte after
// it is refused.
func TestCelledCampaignScopeRoundTrips(t *testing.T) {
	d := campaignScoped()
	d.Cell, d.CellMapVersion = "c1", 4
	r := Record{Type: RecordDefine, At: 1, Def: d}
	payload := r.AppendPayload(nil)
	cellGroup := appendCellFields(nil, &d)
	if !bytes.HasSuffix(payload, append(cellGroup, byte(PurchaseLimitCampaign))) {
		t.Fatalf("DEFINE %x does not end with the cell group %x then the purchase group", payload, cellGroup)
	}
	got, err := DecodeRecord(RecordDefine, payload)
	if err != nil || got.Def != d {
		t.Fatalf("DEFINE round trip: %+v, %v", got.Def, err)
	}

	m := New()
	o, log, err := m.Define(1, d, nil)
	if err != nil || o != OutcomeOK {
		t.Fatalf("define: %s %v", o, err)
	}
	if o, log, err = m.Grant(2, Allocation{Seq: 1, Ranges: []TokenRange{{First: 1, Last: 3}}}, log); err != nil || o != OutcomeOK {
		t.Fatalf("grant: %s %v", o, err)
	}
	var res Result
	if res, log = m.Reserve(3, "r1", "u1", log); res.Outcome != OutcomeAccepted {
		t.Fatalf("reserve: %s", res.Outcome)
	}
	replayAndCompare(t, m, log)
	state := encodeFrozen(t, m.Freeze())
	f := m.Freeze()
	cell, purchase := section(f, (*stateEncoder).encodeCell), section(f, (*stateEncoder).encodePurchase)
	if len(cell) == 0 || len(purchase) != 2 || !bytes.HasSuffix(state, append(append([]byte(nil), cell...), purchase...)) {
		t.Fatalf("the state does not end with the cell section %x then the purchase section %x", cell, purchase)
	}
	back, err := DecodeState(state)
	if err != nil {
		t.Fatal(err)
	}
	if back.Definition() != m.Definition() || back.Hash() != m.Hash() {
		t.Fatalf("restored %+v (hash equal %v)", back.Definition(), back.Hash() == m.Hash())
	}
	body := state[:len(state)-len(cell)-len(purchase)]
	for name, bad := range map[string][]byte{
		"purchase before cell": append(append(append([]byte(nil), body...), purchase...), cell...),
		"purchase twice":       append(append([]byte(nil), state...), purchase...),
		"a byte after":         append(append([]byte(nil), state...), 0),
	} {
		if _, err := DecodeState(bad); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}
