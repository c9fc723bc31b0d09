package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/cells"
)

// TestRouterAnswersAreDocumented: the answers the router makes itself,
// rather than passing on a cell's, validate against the API document
// (httpapi/openapi.json), which a gateway's generated client is built
// from: a request_id lookup two cells hold (422 REQUEST_ID_REUSED), none
// holds (404), one a cell could not be asked about (503
// CELL_UNAVAILABLE), a reserve a cell received and never answered
// (504 RESULT_UNKNOWN), and its own routes: GET /healthz, and GET
// /router/campaigns/{c}/skus/{s} for a SKU it routes (200, the map) and
// one it does not (404 NOT_CELLED).
func TestRouterAnswersAreDocumented(t *testing.T) {
	spec, err := os.ReadFile("../../httpapi/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	lookupCell := func(status int, body string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, body)
		}))
		t.Cleanup(s.Close)
		return strings.TrimPrefix(s.URL, "http://")
	}
	held := func(user string) string {
		return `{"request_id":"r1","outcome":"ACCEPTED","reservation_id":"demo~sku-1~c1~1~00","reservation":{"reservation_id":"demo~sku-1~c1~1~00",` +
			`"request_id":"r1","user_id":"` + user + `","state":"PENDING_PAYMENT","token_id":1,"created_at":"2030-01-01T00:00:00.000Z","expire_at":"2030-01-01T00:15:00.000Z"}}`
	}
	notFound := `{"error":"NOT_FOUND"}`
	silent, _ := silentCell(t)
	m, err := cells.EvenMap(1, []string{"c1", "c2"})
	if err != nil {
		t.Fatal(err)
	}
	pub := cells.Published{Definition: sku.Definition{CampaignID: "demo", SKUID: "sku-1"}, Map: m}
	routerOf := func(c1, c2 string) *router {
		r, err := newRouter(options{cells: "c1=" + c1 + ",c2=" + c2, timeout: 300 * time.Millisecond}, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.routes.Store(cells.NewRoutes([]cells.Published{pub}))
		return r
	}
	userOfC1 := ""
	for u := 0; userOfC1 == ""; u++ {
		if user := fmt.Sprintf("u%d", u); pub.CellOf(user) == "c1" {
			userOfC1 = user
		}
	}
	lookup := "/v1/campaigns/demo/skus/sku-1/requests/r1"
	for _, c := range []struct {
		what         string
		r            *router
		method, path string
		body         string
		status       int
		reason       string
	}{
		{"a lookup two cells hold", routerOf(lookupCell(200, held("a")), lookupCell(200, held("b"))), "GET", lookup, "", 422, "REQUEST_ID_REUSED"},
		{"a lookup no cell holds", routerOf(lookupCell(404, notFound), lookupCell(404, notFound)), "GET", lookup, "", 404, "NOT_FOUND"},
		{"a lookup a cell refused", routerOf(lookupCell(404, notFound), refusedAddr(t)), "GET", lookup, "", 503, "CELL_UNAVAILABLE"},
		{"a reserve a cell never answered", routerOf(silent, refusedAddr(t)), "POST", "/v1/campaigns/demo/skus/sku-1/reservations",
			`{"request_id":"r1","user_id":"` + userOfC1 + `"}`, 504, "RESULT_UNKNOWN"},
		{"the router's liveness", routerOf(refusedAddr(t), refusedAddr(t)), "GET", "/healthz", "", 200, ""},
		{"the map of a SKU it routes", routerOf(refusedAddr(t), refusedAddr(t)), "GET", "/router/campaigns/demo/skus/sku-1", "", 200, ""},
		{"the map of a SKU it does not route", routerOf(refusedAddr(t), refusedAddr(t)), "GET", "/router/campaigns/demo/skus/sku-2", "", 404, "NOT_CELLED"},
	} {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod(c.method)
		ctx.Request.SetRequestURI(c.path)
		ctx.Request.SetHost("router")
		ctx.Request.SetBodyString(c.body)
		c.r.handle(&ctx)
		status, raw := ctx.Response.StatusCode(), append([]byte(nil), ctx.Response.Body()...)
		if status != c.status || c.reason != "" && !bytes.Contains(raw, []byte(`"error":"`+c.reason+`"`)) {
			t.Fatalf("%s: %d %s, want %d %s", c.what, status, raw, c.status, c.reason)
		}
		req, _ := http.NewRequest(c.method, "http://localhost"+c.path, strings.NewReader(c.body))
		if c.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp := &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(raw)), Request: req}
		ctx.Response.Header.VisitAll(func(k, v []byte) { resp.Header.Add(string(k), string(v)) })
		if ok, problems := v.ValidateHttpResponse(req, resp); !ok {
			for _, p := range problems {
				t.Errorf("%s: %d %s: %s (%s)", c.what, status, raw, p.Message, p.Reason)
			}
		}
	}
}
