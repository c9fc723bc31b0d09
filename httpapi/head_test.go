package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHeadWithoutSideEffects: HEAD answers the two GET routes whose GET
// acts (a login link spends its code, the stats stream opens a stream) with
// the GET's status and headers and no side effect: a HEAD of a login link
// is 303 to the dashboard without a session cookie, and the link still
// works once for the GET after it; a HEAD of a used link is 403
// LOGIN_LINK_INVALID; a HEAD of the stats stream is 200 text/event-stream,
// answered at once with no body.
func TestHeadWithoutSideEffects(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	client := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	send := func(method, path string, header map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, ts.base+path, nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		resp.Body.Close()
		return resp
	}
	link := ts.admin(http.MethodPost, "/admin/dashboard/login-links", nil).str("login_url")
	if !strings.HasPrefix(link, "/admin/dashboard/login?code=") {
		t.Fatalf("login link %q", link)
	}
	for range 2 {
		resp := send(http.MethodHead, link, nil)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/admin/dashboard" || len(resp.Cookies()) != 0 {
			t.Fatalf("HEAD of a login link: %d, Location %q, cookies %v", resp.StatusCode, resp.Header.Get("Location"), resp.Cookies())
		}
	}
	if resp := send(http.MethodGet, link, nil); resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("GET of the login link after HEADs: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	if resp := send(http.MethodHead, link, nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("HEAD of a used login link: %d, want 403", resp.StatusCode)
	}
	resp := send(http.MethodHead, "/admin/stats/stream", map[string]string{"Authorization": "Bearer " + testToken})
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("HEAD of the stats stream: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if resp := send(http.MethodHead, "/admin/stats/stream", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("HEAD of the stats stream without a token: %d, want 401", resp.StatusCode)
	}
}
