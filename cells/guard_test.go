package cells

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/httpapi/httpapitest"
)

// TestGuardEveryReservePath: a user of another cell is refused with
// ErrWrongCell by Reserve, ReserveWith (entry passes) and each item of
// ReserveBatch, and never reaches the engine (a real one, the SKU granted
// 10 tokens); this cell's users do; a SKU that is not celled is not
// checked.
func TestGuardEveryReservePath(t *testing.T) {
	m, err := EvenMap(1, []string{"c1", "c2"})
	if err != nil {
		t.Fatal(err)
	}
	pub := Published{Definition: sku.Definition{CampaignID: "demo", SKUID: "sku-1"}, Map: m}
	var mine, other string
	for u := 0; mine == "" || other == ""; u++ {
		user := fmt.Sprintf("u%d", u)
		if pub.CellOf(user) == "c1" {
			mine = user
		} else {
			other = user
		}
	}
	e := openCell(t, t.TempDir(), "c1") // demo/sku-1, cell c1
	defer e.Close()
	ctx := context.Background()
	if err := e.Grant(ctx, "demo", "sku-1", sku.Allocation{Seq: 1, Ranges: []sku.TokenRange{{First: 1, Last: 10}}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := e.Define(ctx, sku.Definition{CampaignID: "demo", SKUID: "cold", StartAt: now.Add(-time.Second).UnixMilli(),
		EndAt: now.Add(time.Hour).UnixMilli(), PaymentWindowMs: 60_000, SaleLimit: 10, ReleaseOnClose: true}); err != nil {
		t.Fatal(err)
	}
	g := NewGuard(e, "c1", []Published{pub}, nil)
	if _, err := g.ReserveWith(ctx, "demo", "sku-1", "r1", other, sku.Holder{}); !errors.Is(err, actors.ErrWrongCell) {
		t.Fatalf("reserve of another cell's user: %v", err)
	} else if cell := client.WrongCell(&client.Error{Code: "WRONG_CELL", Detail: err.Error()}); cell != "c2" {
		// The 421's detail is this error's text: the client package
		// reads the user's cell from it to follow the 421.
		t.Fatalf("the client reads cell %q from %q, want c2", cell, err)
	}
	if _, err := g.ReserveWith(ctx, "demo", "sku-1", "r2", other, sku.Holder{Risk: 1}); !errors.Is(err, actors.ErrWrongCell) {
		t.Fatalf("reserve with a pass of another cell's user: %v", err)
	}
	res, err := g.ReserveBatch(ctx, "demo", "sku-1", []actors.ReserveItem{{RequestID: "r3", UserID: other}, {RequestID: "r4", UserID: mine}, {RequestID: "r5", UserID: other}})
	if err != nil || len(res) != 3 || !errors.Is(res[0].Err, actors.ErrWrongCell) || res[1].Err != nil ||
		res[1].Result.Outcome != sku.OutcomeAccepted || !errors.Is(res[2].Err, actors.ErrWrongCell) {
		t.Fatalf("batch: %+v, %v", res, err)
	}
	if res, err := g.ReserveWith(ctx, "demo", "sku-1", "r6", mine, sku.Holder{}); err != nil || res.Outcome != sku.OutcomeAlreadyPurchased {
		t.Fatalf("this cell's user again: %+v %v", res.Outcome, err)
	}
	if res, err := g.ReserveWith(ctx, "demo", "cold", "r7", other, sku.Holder{}); err != nil || res.Outcome != sku.OutcomeAccepted {
		t.Fatalf("not celled, not checked: %+v %v", res.Outcome, err) // not celled: not checked
	}
	for skuID, want := range map[string]uint32{"sku-1": 1, "cold": 1} {
		if a, err := e.Audit(ctx, "demo", skuID); err != nil || a.Counts.Reservations != want {
			t.Fatalf("%s: %d reservations reached the engine, want %d (%v)", skuID, a.Counts.Reservations, want, err)
		}
	}
}

// TestEmptyCellSendsOtherCellsUsersToTheirCell: once this cell has sold
// its last unit, a reserve for a user of another cell, sent to it over
// HTTP, still gets 421 WRONG_CELL naming the user's cell and its address
// (as the cells announced them in etcd), not the empty cell's SOLD_OUT,
// alone and as a batch item; this cell's users get SOLD_OUT.
func TestEmptyCellSendsOtherCellsUsersToTheirCell(t *testing.T) {
	m, err := EvenMap(1, []string{"c1", "c2"})
	if err != nil {
		t.Fatal(err)
	}
	pub := Published{Definition: sku.Definition{CampaignID: "demo", SKUID: "sku-1"}, Map: m}
	var mine, other []string
	for u := 0; len(mine) < 2 || len(other) < 1; u++ {
		user := fmt.Sprintf("u%d", u)
		if pub.CellOf(user) == "c1" {
			mine = append(mine, user)
		} else {
			other = append(other, user)
		}
	}
	e := openCell(t, t.TempDir(), "c1")
	t.Cleanup(func() { e.Close() })
	ctx := context.Background()
	if err := e.Grant(ctx, "demo", "sku-1", sku.Allocation{Seq: 1, Ranges: []sku.TokenRange{{First: 1, Last: 1}}}); err != nil {
		t.Fatal(err)
	}
	g := NewGuard(e, "c1", []Published{pub}, nil)
	g.SetAddresses(map[string]string{"c1": "http://127.0.0.1:1", "c2": "http://127.0.0.1:2"})
	url := httpapitest.Serve(t, httpapi.Config{Engine: g, Claimer: g, CellGuard: g, AdminToken: localToken, Logger: quiet, RequestTimeout: 2 * time.Second})
	spec := openAPIOf(t, url)
	post := func(path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/campaigns/demo/skus/sku-1/"+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		check, _ := http.NewRequest(http.MethodPost, "http://localhost"+req.URL.Path, strings.NewReader(body))
		check.Header = req.Header
		if ok, problems := spec.ValidateHttpResponse(check, resp); !ok {
			for _, p := range problems {
				t.Errorf("%s -> %d %s: not as openapi.json says: %s (%s)", path, resp.StatusCode, raw, p.Message, p.Reason)
			}
		}
		return resp.StatusCode, out
	}
	if code, body := post("reservations", `{"request_id":"r0","user_id":"`+mine[0]+`"}`); code != http.StatusAccepted {
		t.Fatalf("the last unit: %d %v", code, body)
	}
	if st, _ := g.SKUStats("demo", "sku-1"); st.Counts.Available != 0 {
		t.Fatalf("available %d after the last unit was sold, want 0 (published before the answer)", st.Counts.Available)
	}
	if code, body := post("reservations", `{"request_id":"r1","user_id":"`+mine[1]+`"}`); code != http.StatusConflict || body["error"] != "SOLD_OUT" {
		t.Fatalf("this cell's user: %d %v, want 409 SOLD_OUT", code, body)
	}
	wrongCell := func(what string, code int, body map[string]any) {
		t.Helper()
		if code != http.StatusMisdirectedRequest || body["error"] != "WRONG_CELL" || body["cell"] != "c2" ||
			body["address"] != "http://127.0.0.1:2" || !strings.Contains(fmt.Sprint(body["detail"]), "cell c2") {
			t.Fatalf("%s: %d %v, want 421 WRONG_CELL naming c2 and its address", what, code, body)
		}
	}
	code, body := post("reservations", `{"request_id":"r2","user_id":"`+other[0]+`"}`)
	wrongCell("another cell's user at the empty cell", code, body)
	code, body = post("reservations:batch", `{"items":[{"request_id":"r3","user_id":"`+other[0]+`"},{"request_id":"r4","user_id":"`+mine[1]+`"}]}`)
	results, _ := body["results"].([]any)
	if code != http.StatusOK || len(results) != 2 {
		t.Fatalf("batch: %d %v", code, body)
	}
	first, _ := results[0].(map[string]any)
	firstBody, _ := first["body"].(map[string]any)
	wrongCell("a batch item of another cell's user", int(first["status"].(float64)), firstBody)
	if second, _ := results[1].(map[string]any); second["status"] != 409.0 {
		t.Fatalf("batch item of this cell's user: %v, want 409", second)
	}
}

// openAPIOf is a validator of the OpenAPI document the server at url
// serves (GET /openapi.json).
func openAPIOf(t *testing.T, url string) validator.Validator {
	t.Helper()
	resp, err := http.Get(url + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return v
}

// TestCellStatsShowTheAuditsInvariant: a cell's /admin/stats, which the
// dashboard draws, judges the conservation of tokens as the audit does
// (sku.Counts.Conservation): a cell holds what the ledger granted it, not
// the sale's sale_limit, so with 3 of 300 units granted, 1 returned and 1
// reserved both say ok, and the row shows the cell, its grants and
// returns.
func TestCellStatsShowTheAuditsInvariant(t *testing.T) {
	e := openCell(t, t.TempDir(), "c1") // sale_limit 300
	t.Cleanup(func() { e.Close() })
	ctx := context.Background()
	if err := e.Grant(ctx, "demo", "sku-1", sku.Allocation{Seq: 1, Ranges: []sku.TokenRange{{First: 1, Last: 3}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Return(ctx, "demo", "sku-1", 1, 0, 1); err != nil {
		t.Fatal(err)
	}
	if res, err := e.Reserve(ctx, "demo", "sku-1", "r1", "u1"); err != nil || res.Outcome != sku.OutcomeAccepted {
		t.Fatalf("reserve: %v %v", res.Outcome, err)
	}
	g := NewGuard(e, "c1", nil, nil)
	url := httpapitest.Serve(t, httpapi.Config{Engine: g, Claimer: g, CellGuard: g, AdminToken: localToken, Logger: quiet,
		RequestTimeout: 2 * time.Second, StatsInterval: 10 * time.Millisecond})
	get := func(path string, out any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url+path, nil)
		req.Header.Set("Authorization", "Bearer "+localToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %v", path, resp.StatusCode, err)
		}
	}
	var audit struct {
		InvariantOK bool `json:"invariant_ok"`
	}
	get("/admin/campaigns/demo/skus/sku-1/audit", &audit)
	type row struct {
		Cell                                   string
		SaleLimit                              uint64 `json:"sale_limit"`
		Available, Reserved, Granted, Returned uint64
		InvariantOK                            bool `json:"invariant_ok"`
	}
	var stats struct {
		Totals row   `json:"totals"`
		SKUs   []row `json:"skus"`
	}
	within(t, "a stats sample with the reservation", func() bool {
		get("/admin/stats", &stats)
		return len(stats.SKUs) == 1 && stats.SKUs[0].Reserved == 1
	})
	r := stats.SKUs[0]
	want := row{Cell: "c1", SaleLimit: 300, Available: 1, Reserved: 1, Granted: 3, Returned: 1, InvariantOK: true}
	if r.Cell != want.Cell || r.SaleLimit != want.SaleLimit || r.Available != want.Available || r.Granted != want.Granted ||
		r.Returned != want.Returned || !r.InvariantOK || !stats.Totals.InvariantOK || !audit.InvariantOK {
		t.Fatalf("stats row %+v (totals ok %v), audit ok %v; want %+v, all ok", r, stats.Totals.InvariantOK, audit.InvariantOK, want)
	}
}
