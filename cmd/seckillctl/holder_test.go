package main

import (
	"encoding/json"
	"testing"

	"github.com/seckill/seckill/actors/sku"
)

// A RESERVED record's holder shows in the dump: tier, risk and the subject
// keys in hex by kind; a record without a pass shows none.
func TestRecordHolder(t *testing.T) {
	r := sku.Record{Type: sku.RecordReserved, At: 1, Seq: 1, Token: 1, ExpireAt: 2, RequestID: "ep.x", UserID: "u",
		Holder: sku.Holder{Tier: 3, Risk: 1, Subjects: 0b1001, Keys: [4]sku.SubjectKey{{1, 2, 3, 4, 5, 6, 7, 8}, {}, {}, {0xff}}}}
	b, err := json.Marshal(recordOf(1, &r, "c", "s", [16]byte{}).Holder)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"tier":3,"risk":1,"subjects":{"device":"0102030405060708","network":"ff00000000000000"}}`; string(b) != want {
		t.Fatalf("%s, want %s", b, want)
	}
	r.Holder = sku.Holder{}
	if h := recordOf(1, &r, "c", "s", [16]byte{}).Holder; h != nil {
		t.Fatalf("a record without a pass shows %+v", h)
	}
}
