package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/seckill/seckill/httpapi"
)

// openAPIValidator parses httpapi/openapi.json and checks it against the
// OpenAPI 3.1 schema (pb33f/libopenapi-validator).
func openAPIValidator(t *testing.T) validator.Validator {
	t.Helper()
	spec, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		t.Fatalf("openapi.json does not parse: %v", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("openapi.json: %v", errs)
	}
	if ok, problems := v.ValidateDocument(); !ok {
		for _, p := range problems {
			t.Errorf("openapi.json is not a valid OpenAPI 3.1 document: %s: %s", p.Message, p.Reason)
		}
		t.FailNow()
	}
	return v
}

// The OpenAPI document is valid, documents every route the router serves
// and nothing else (HEAD is implied by GET, as the document says), and is
// the one served at /openapi.json. A route marked "x-served-by":
// "seckill-router" is the cells' router's own (its tests check its
// answers against the document): seckilld must not serve it.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	openAPIValidator(t)
	ts := startServer(t, serverOptions{})
	served := map[string]bool{}
	for method, paths := range httpapi.Routes(ts.srv) {
		for _, path := range paths {
			served[strings.ToLower(method)+" "+path] = true
		}
	}
	var spec struct {
		Paths map[string]map[string]struct {
			ServedBy string `json:"x-served-by"`
		} `json:"paths"`
	}
	raw, _ := os.ReadFile("openapi.json")
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	documented, routers := map[string]bool{}, map[string]bool{}
	for path, ops := range spec.Paths {
		for method, op := range ops {
			switch op.ServedBy {
			case "":
				documented[method+" "+path] = true
			case "seckill-router":
				routers[method+" "+path] = true
			default:
				t.Errorf("%s %s: x-served-by %q, want seckill-router or none", method, path, op.ServedBy)
			}
		}
	}
	var missing, extra []string
	for route := range served {
		method, path, _ := strings.Cut(route, " ")
		if method == "head" && documented["get "+path] {
			continue // a GET route answers HEAD
		}
		if routers[route] {
			t.Errorf("%s is seckill-router's own route (x-served-by) but seckilld serves it", route)
		} else if !documented[route] {
			missing = append(missing, route)
		}
	}
	for route := range documented {
		if !served[route] {
			extra = append(extra, route)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("routes served but not in httpapi/openapi.json: %v", missing)
	}
	if len(extra) > 0 {
		t.Errorf("routes in httpapi/openapi.json that the router does not serve: %v", extra)
	}
	if got := ts.get("/openapi.json"); got.status != http.StatusOK || !bytes.Equal(got.raw, raw) {
		t.Errorf("/openapi.json: %d, %d bytes (the file has %d)", got.status, len(got.raw), len(raw))
	}
}

// Real answers of the flow, its errors and the admin routes match what the
// document says of them: status codes, headers and bodies.
func TestOpenAPIMatchesAnswers(t *testing.T) {
	t.Parallel()
	v := openAPIValidator(t)
	ts := startServer(t, serverOptions{})
	exchange := func(method, path, body string, admin bool) int {
		t.Helper()
		req, err := http.NewRequest(method, ts.base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if admin {
			req.Header.Set("Authorization", "Bearer "+testToken)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		check, _ := http.NewRequest(method, "http://localhost"+path, strings.NewReader(body))
		check.Header = req.Header
		if ok, problems := v.ValidateHttpResponse(check, resp); !ok {
			for _, p := range problems {
				t.Errorf("%s %s -> %d %s: %s (%s)", method, path, resp.StatusCode, raw, p.Message, p.Reason)
			}
		}
		return resp.StatusCode
	}
	campaign, _ := json.Marshal(campaign("oa", "15m", map[string]int{"s": 1}))
	for _, c := range []struct {
		method, path, body string
		admin              bool
		status             int
	}{
		{"PUT", "/admin/campaigns/oa", string(campaign), true, 201},
		{"PUT", "/admin/campaigns/oa", string(campaign), true, 200},
		{"PUT", "/admin/campaigns/oa", `{"skus":[]}`, true, 400},
		{"PUT", "/admin/campaigns/oa", string(campaign), false, 401},
		{"GET", "/admin/campaigns/oa", "", true, 200},
		{"GET", "/admin/campaigns", "", true, 200},
		{"GET", "/v1/campaigns/oa/skus/s", "", false, 200},
		{"POST", "/v1/campaigns/oa/skus/s/reservations", `{"request_id":"r1","user_id":"u1"}`, false, 202},
		{"POST", "/v1/campaigns/oa/skus/s/reservations", `{"request_id":"r2","user_id":"u2"}`, false, 409},
		{"POST", "/v1/campaigns/oa/skus/s/reservations", `{"request_id":"r3"}`, false, 400},
		{"POST", "/v1/campaigns/oa/skus/nope/reservations", `{"request_id":"r4","user_id":"u4"}`, false, 404},
		{"GET", "/v1/campaigns/oa/skus/s/requests/r1", "", false, 200},
		{"GET", "/admin/campaigns/oa/skus/s/audit", "", true, 200},
		{"GET", "/admin/campaigns/oa/skus/s/refunds", "", true, 200},
		{"POST", "/admin/campaigns/oa/skus/s/pause", "", true, 200},
		{"POST", "/v1/campaigns/oa/skus/s/reservations", `{"request_id":"r5","user_id":"u5"}`, false, 503},
		{"POST", "/admin/campaigns/oa/skus/s/resume", "", true, 200},
		{"POST", "/admin/campaigns/oa/skus/s/snapshot", "", true, 200},
		{"POST", "/admin/dashboard/login-links", "", true, 201},
		{"POST", "/admin/dashboard/login-links", "", false, 401},
		{"GET", "/admin/dashboard/login?code=used-or-never-issued", "", false, 403},
		{"GET", "/healthz", "", false, 200},
		{"GET", "/readyz", "", false, 200},
	} {
		if got := exchange(c.method, c.path, c.body, c.admin); got != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, got, c.status)
		}
	}
	id := ts.reserve("oa", "s", "r1", "u1").str("reservation_id")
	for _, c := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/v1/reservations/" + id, "", 200},
		{"POST", "/v1/reservations/" + id + "/payment", `{"payment_id":"p1"}`, 200},
		{"POST", "/v1/reservations/" + id + "/payment", `{"payment_id":"p2"}`, 409},
		{"POST", "/v1/reservations/" + id + "/cancel", "", 409},
		{"POST", "/admin/reservations/" + id + "/release", "", 409},
	} {
		if got := exchange(c.method, c.path, c.body, strings.HasPrefix(c.path, "/admin/")); got != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, got, c.status)
		}
	}
}
