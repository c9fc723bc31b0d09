package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/httpapi"
)

// A dashboard login link: issued with the admin token only; opened once,
// within its minute, it sets the session cookie (HttpOnly, SameSite=Strict,
// for /admin/) and sends the browser to the dashboard; the cookie reads
// /admin/stats and its stream and nothing else; a used, expired or made-up
// code is 403 LOGIN_LINK_INVALID; the session ends after
// DashboardSessionTTL, and a cookie signed under another admin token (or
// altered) is refused.
func TestDashboardLoginLink(t *testing.T) {
	t.Parallel()
	clock := newStepClock()
	ts := startServer(t, serverOptions{config: func(c *httpapi.Config) { c.Clock = clock.now }})
	noRedirect := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	open := func(url string) *http.Response {
		t.Helper()
		resp, err := noRedirect.Get(ts.base + url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	issue := func() string {
		t.Helper()
		r := ts.admin(http.MethodPost, "/admin/dashboard/login-links", nil)
		url := r.str("login_url")
		if r.status != http.StatusCreated || !strings.HasPrefix(url, "/admin/dashboard/login?code=") || r.header.Get("Cache-Control") != "no-store" ||
			num(r, "session_seconds") != int(httpapi.DashboardSessionTTL/time.Second) {
			t.Fatalf("issuing a login link: %v", r)
		}
		if strings.Contains(url, testToken) {
			t.Fatalf("the admin token is in the link: %s", url)
		}
		return url
	}
	want(t, ts.post("/admin/dashboard/login-links", nil), http.StatusUnauthorized, "UNAUTHORIZED")
	// The body carries nothing: a field (a lifetime the link would not
	// have), another value or no JSON is refused and issues no link.
	for body, reason := range map[string]string{`{"ttl":"1h"}`: "BAD_REQUEST", `[]`: "BAD_REQUEST", `ttl=1h`: "INVALID_JSON"} {
		want(t, ts.admin(http.MethodPost, "/admin/dashboard/login-links", body), http.StatusBadRequest, reason)
	}
	if r := ts.admin(http.MethodPost, "/admin/dashboard/login-links", "{}"); r.status != http.StatusCreated {
		t.Fatalf("a link asked with {}: %v", r)
	}

	link := issue()
	resp := open(link)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/admin/dashboard" {
		t.Fatalf("opening the link: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "seckill_dashboard" {
			session = c
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Path != "/admin/" ||
		session.Secure || session.MaxAge != int(httpapi.DashboardSessionTTL/time.Second) {
		t.Fatalf("session cookie %+v from %q", session, resp.Header.Values("Set-Cookie"))
	}
	withCookie := func(path string, c *http.Cookie) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.base+path, nil)
		req.AddCookie(c)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := withCookie("/admin/stats", session); got != http.StatusOK {
		t.Fatalf("/admin/stats with the session: %d", got)
	}
	for _, path := range []string{"/admin/campaigns", "/admin/campaigns/demo/skus/s/audit"} {
		if got := withCookie(path, session); got != http.StatusUnauthorized {
			t.Fatalf("%s with the session: %d, want 401 (the session reads the stats only)", path, got)
		}
	}
	altered := *session
	altered.Value = strings.Replace(session.Value, ".", "9.", 1) // a later expiry, the same signature
	if got := withCookie("/admin/stats", &altered); got != http.StatusUnauthorized {
		t.Fatalf("an altered session cookie: %d, want 401", got)
	}

	// Once only.
	if resp := open(link); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the link opened twice: %d", resp.StatusCode)
	}
	// Within its minute only.
	late := issue()
	clock.step(httpapi.DashboardLoginCodeTTL)
	if resp := open(late); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the link opened after a minute: %d", resp.StatusCode)
	}
	r := call(t, http.MethodGet, ts.base+"/admin/dashboard/login?code=made-up", nil, nil)
	want(t, r, http.StatusForbidden, "LOGIN_LINK_INVALID")
	if !strings.Contains(r.str("detail"), "seckillctl dashboard-link") {
		t.Fatalf("the refusal does not say how to get a new link: %v", r)
	}

	// The session ends after DashboardSessionTTL.
	clock.step(httpapi.DashboardSessionTTL - httpapi.DashboardLoginCodeTTL - time.Second)
	if got := withCookie("/admin/stats", session); got != http.StatusOK {
		t.Fatalf("the session a second before its end: %d", got)
	}
	clock.step(time.Second)
	if got := withCookie("/admin/stats", session); got != http.StatusUnauthorized {
		t.Fatalf("the session after its end: %d, want 401", got)
	}

	// Another admin token: its sessions are not this one's.
	other := startServer(t, serverOptions{config: func(c *httpapi.Config) { c.Clock = clock.now; c.AdminToken = "another-admin-token" }})
	fresh := open(issue())
	for _, c := range fresh.Cookies() {
		req, _ := http.NewRequest(http.MethodGet, other.base+"/admin/stats", nil)
		req.AddCookie(c)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a session of another admin token: %d, want 401", resp.StatusCode)
		}
	}
}
