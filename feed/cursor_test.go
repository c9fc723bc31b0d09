package feed

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
)

// A cursor of CampaignFeedMaxSKUs positions at the widest index the bound
// assumes fits CampaignCursorMaxBytes, and one more position does not: the
// bound is as large as it can be.
func TestCampaignCursorBound(t *testing.T) {
	positions := map[string]string{}
	for i := range CampaignFeedMaxSKUs + 1 {
		positions[fmt.Sprint(i)] = eventID(fmt.Sprintf("%016x", rand.Uint64()), 1<<35-1)
		if n := len(CampaignCursor(positions)); (i < CampaignFeedMaxSKUs) != (n <= CampaignCursorMaxBytes) {
			t.Fatalf("%d positions: %d bytes (bound %d, %d SKUs)", i+1, n, CampaignCursorMaxBytes, CampaignFeedMaxSKUs)
		}
	}
}

// CampaignCursor and ParseCampaignCursor round-trip any positions (keyed
// by history once parsed), and the same positions give the same cursor.
func TestCampaignCursorRoundTrip(t *testing.T) {
	for range 200 {
		positions, byHistory := map[string]string{}, map[string]string{}
		for i := range rand.IntN(50) {
			h := fmt.Sprintf("%016x", rand.Uint64())
			id := eventID(h, 1+rand.Uint64N(1<<rand.IntN(64)))
			positions[fmt.Sprintf("sku-%d", i)], byHistory[h] = id, id
		}
		cursor := CampaignCursor(positions)
		got, err := ParseCampaignCursor(cursor)
		if err != nil || !maps.Equal(got, byHistory) || CampaignCursor(got) != cursor {
			t.Fatalf("%v -> %q -> %v (%v)", positions, cursor, got, err)
		}
	}
}
