package main

import (
	"encoding/json"
	"testing"

	"github.com/seckill/seckill/actors/sku"
)

// A RESERVED record's entry pass shows in the dump: its tier and risk as
// the feed's event has them, and, beyond the event, the subject keys in
// hex by kind; a record without a pass shows none of them.
func TestRecordHolder(t *testing.T) {
	r := sku.Record{Type: sku.RecordReserved, At: 1, Seq: 1, Token: 1, ExpireAt: 2, RequestID: "ep.x", UserID: "u",
		Holder: sku.Holder{Tier: 3, Risk: 1, Subjects: 0b1001, Keys: [4]sku.SubjectKey{{1, 2, 3, 4, 5, 6, 7, 8}, {}, {}, {0xff}}}}
	j := recordOf(1, &r, sku.Definition{CampaignID: "c", SKUID: "s"})
	b, err := json.Marshal(j.Subjects)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"device":"0102030405060708","network":"ff00000000000000"}`; string(b) != want || j.Tier == nil || *j.Tier != 3 || j.Risk == nil || *j.Risk != 1 {
		t.Fatalf("subjects %s, want %s; tier %v, risk %v", b, want, j.Tier, j.Risk)
	}
	r.Holder = sku.Holder{}
	if j := recordOf(1, &r, sku.Definition{CampaignID: "c", SKUID: "s"}); j.Subjects != nil || j.Tier != nil || j.Risk != nil {
		t.Fatalf("a record without a pass shows %+v", j)
	}
}
