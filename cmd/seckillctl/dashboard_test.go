package main

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/httpapi/httpapitest"
)

// dashboard-link against the real HTTP service: the link alone on stdout
// (with the server's base, without the admin token), opened it sets the
// session cookie and redirects to the dashboard; a refused token is exit
// 2 with a hint, nothing on stdout.
func TestDashboardLink(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := actors.Open(actors.Config{DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	const token = "dashboard-link-token"
	base := httpapitest.Serve(t, httpapi.Config{Engine: e, AdminToken: token, Logger: quiet})

	code, out, errOut := ctl(t, "dashboard-link", "--server", base+"/", "--admin-token", token)
	link := strings.TrimSpace(out)
	if code != exitOK || !strings.HasPrefix(link, base+"/admin/dashboard/login?code=") || strings.Contains(link, token) ||
		strings.Count(out, "\n") != 1 || !strings.Contains(errOut, "works once") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/admin/dashboard" || len(resp.Cookies()) != 1 || !resp.Cookies()[0].HttpOnly {
		t.Fatalf("opening the link: %d %v", resp.StatusCode, resp.Header)
	}

	code, out, errOut = ctl(t, "dashboard-link", "--server", base, "--admin-token", "wrong")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "401 Unauthorized") || !strings.Contains(errOut, "the admin token was refused") {
		t.Fatalf("a wrong token: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	t.Setenv("SECKILL_ADMIN_TOKEN", token)
	wantCode(t, exitOK, "dashboard-link", "--server", base)
	wantCode(t, exitUsage, "dashboard-link")
}
