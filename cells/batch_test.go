package cells

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/seckill/seckill/actors/sku"
)

// TestSplitAndJoinBatch: a batch of users of three cells is split into one
// sub-batch per cell, each item to its user's cell in order (a bad item
// with the first cell's), and the cells' answers are put back in the
// items' order; a cell that answered something else than its results, or
// nothing, gives each of its items that answer or 503 CELL_UNAVAILABLE.
func TestSplitAndJoinBatch(t *testing.T) {
	m, err := EvenMap(1, []string{"c1", "c2", "c3"})
	if err != nil {
		t.Fatal(err)
	}
	pub := Published{Definition: sku.Definition{CampaignID: "demo", SKUID: "hot"}, Map: m}
	r := NewRoutes([]Published{pub})
	if got := r.Decide("POST", "/v1/campaigns/demo/skus/hot/reservations:batch", nil); !got.Batch || got.SKU == nil ||
		got.SKU.Definition.CampaignID != "demo" || got.SKU.Definition.SKUID != "hot" {
		t.Fatalf("batch route: %+v", got)
	}
	var items []string
	for i := range 30 {
		items = append(items, fmt.Sprintf(`{"request_id":"r%d","user_id":"u%d"}`, i, i))
	}
	items = append(items, `{"request_id":"bad"}`)
	body := []byte(`{"items":[` + strings.Join(items, ",") + `]}`)
	split, err := SplitBatch(&pub, body, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if split.Items != 31 || len(split.Parts) != 3 {
		t.Fatalf("split: %d items in %d parts", split.Items, len(split.Parts))
	}
	seen := make([]bool, 31)
	for _, part := range split.Parts {
		var env struct {
			Items []struct {
				RequestID string `json:"request_id"`
				UserID    string `json:"user_id"`
			} `json:"items"`
		}
		if err := json.Unmarshal(part.Body, &env); err != nil || len(env.Items) != len(part.At) {
			t.Fatalf("part %s: %s (%v)", part.Cell, part.Body, err)
		}
		for j, it := range env.Items {
			at := part.At[j]
			if seen[at] || (j > 0 && at <= part.At[j-1]) {
				t.Fatalf("item %d twice or out of order in %s", at, part.Cell)
			}
			seen[at] = true
			want := m.Cells[0]
			if at < 30 {
				want = pub.CellOf(fmt.Sprintf("u%d", at))
			}
			if it.RequestID != fmt.Sprintf("r%d", at) && at < 30 || part.Cell != want {
				t.Fatalf("item %d (%+v) in %s, want %s", at, it, part.Cell, want)
			}
		}
	}

	// The first cell answers its results, the second a 404, the third nothing.
	answers := make([]PartAnswer, len(split.Parts))
	for k, part := range split.Parts {
		switch k {
		case 0:
			var rs []string
			for _, at := range part.At {
				rs = append(rs, fmt.Sprintf(`{"status":202,"body":{"n":%d}}`, at))
			}
			answers[k] = PartAnswer{Status: 200, Body: []byte(`{"results":[` + strings.Join(rs, ",") + `]}`)}
		case 1:
			answers[k] = PartAnswer{Status: 404, Body: []byte(`{"error":"NOT_FOUND"}`)}
		default:
			answers[k] = PartAnswer{Err: errors.New("connection refused")}
		}
	}
	var joined struct {
		Results []struct {
			Status     int `json:"status"`
			RetryAfter int `json:"retry_after"`
			Body       struct {
				N     *int   `json:"n"`
				Error string `json:"error"`
			} `json:"body"`
		} `json:"results"`
	}
	if err := json.Unmarshal(JoinBatch(split, answers), &joined); err != nil || len(joined.Results) != 31 {
		t.Fatalf("joined: %v, %d results", err, len(joined.Results))
	}
	for k, part := range split.Parts {
		for _, at := range part.At {
			r := joined.Results[at]
			switch k {
			case 0:
				if r.Status != 202 || r.Body.N == nil || *r.Body.N != at {
					t.Fatalf("result %d: %+v, want the first cell's answer for it", at, r)
				}
			case 1:
				if r.Status != 404 || r.Body.Error != "NOT_FOUND" {
					t.Fatalf("result %d: %+v, want the second cell's 404", at, r)
				}
			default:
				if r.Status != 503 || r.RetryAfter != 1 || r.Body.Error != "CELL_UNAVAILABLE" {
					t.Fatalf("result %d: %+v, want 503 CELL_UNAVAILABLE", at, r)
				}
			}
		}
	}
	for _, bad := range []string{``, `[]`, `{"items":[]}`, `{"items":[{}],"x":1}`, `{"items":{}}`} {
		if _, err := SplitBatch(&pub, []byte(bad), 1000); !errors.Is(err, ErrBatchEnvelope) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
	if _, err := SplitBatch(&pub, body, 30); !errors.Is(err, ErrBatchEnvelope) {
		t.Fatalf("31 items over a bound of 30: %v", err)
	}
}

// A body of one key that is not "items" is no envelope (not read as one:
// fastjson's Array of a missing key panics), and a cell's 200 without "results"
// gives its items that answer.
func TestSplitBatchWithoutItemsAndJoinWithoutResults(t *testing.T) {
	m, err := EvenMap(1, []string{"c1"})
	if err != nil {
		t.Fatal(err)
	}
	pub := Published{Definition: sku.Definition{CampaignID: "demo", SKUID: "hot"}, Map: m}
	for _, body := range []string{`{"a":1}`, `{"items":{}}`, `{"Items":[{}]}`} {
		if _, err := SplitBatch(&pub, []byte(body), 1000); !errors.Is(err, ErrBatchEnvelope) {
			t.Errorf("%s: %v, want ErrBatchEnvelope", body, err)
		}
	}
	split, err := SplitBatch(&pub, []byte(`{"items":[{"request_id":"r1","user_id":"u1"}]}`), 1000)
	if err != nil {
		t.Fatal(err)
	}
	got := string(JoinBatch(split, []PartAnswer{{Status: 200, Body: []byte(`{"ok":true}`)}}))
	if got != `{"results":[{"status":200,"body":{"ok":true}}]}` {
		t.Fatalf("join of a 200 without results: %s", got)
	}
}
