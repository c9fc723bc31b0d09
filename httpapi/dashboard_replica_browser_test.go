package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
	"github.com/seckill/seckill/internal/etcdtest"
)

// The dashboard of a replica set's primary, in a real browser: two real
// seckillds (a, b) of replica set rs1 on a real etcd. The Replica set card
// shows a as primary of the epoch its /healthz says, b in the sync set
// once published, caught up; b stopped, the card shows the sync set empty
// once the primary unpublished it. A single seckilld shows no such card
// (TestDashboardInBrowser: #replica stays hidden).
func TestDashboardShowsTheReplicaSet(t *testing.T) {
	browser := chromium(t)
	etcd := etcdtest.Start(t)
	bin := seckilldtest.Build(t, raceEnabled)
	dir := t.TempDir()
	replica := func(name string) *seckilldtest.Daemon {
		return seckilldtest.StartReplica(t, bin, filepath.Join(dir, name), []string{"SECKILL_ADMIN_TOKEN=" + testToken},
			"--replica", name, "--replica-set", "rs1", "--replication-addr", "127.0.0.1:0", "--etcd", etcd.Endpoint, "--lease-ttl", "2s")
	}
	a := replica("a")
	epoch := waitRole(t, a.Base, "primary")
	b := replica("b")
	waitRole(t, b.Base, "standby")
	origin, err := url.Parse(a.Base)
	if err != nil {
		t.Fatal(err)
	}

	page, problems := openBrowser(t, browser, origin)
	link := call(t, http.MethodPost, a.Base+"/admin/dashboard/login-links", nil, map[string]string{"Authorization": "Bearer " + testToken})
	if link.status != http.StatusCreated {
		t.Fatalf("login link: %v", link)
	}
	if err := chromedp.Do(page, chromedp.EmulateViewport(1400, 1000), chromedp.Navigate(a.Base+link.str("login_url"))); err != nil {
		t.Fatal(err)
	}
	pageShows(t, page, "#conn", "live")
	pageShows(t, page, "#r-set", "rs1")
	pageShows(t, page, "#replica .r-role", "primary")
	pageShows(t, page, "#replica .r-epoch", epoch)
	pageShows(t, page, "#replica .r-sync", "b")
	for deadline := time.Now().Add(browserBound); !strings.HasPrefix(pageText(t, page, "#replica .r-standby"), "caught up · lag "); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("standby b shows %q, not caught up", pageText(t, page, "#replica .r-standby"))
		}
	}

	if err := b.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-b.Exited
	pageShows(t, page, "#replica .r-sync", "none")
	pageShows(t, page, "#replica .r-standby", "disconnected")
	if p := problems.list(); len(p) > 0 {
		t.Fatalf("the page misbehaved:\n%s", strings.Join(p, "\n"))
	}
}

// waitRole waits until the replica at base says role on /healthz and
// returns the epoch it says.
func waitRole(t *testing.T, base, role string) string {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var h struct {
			Role  string      `json:"role"`
			Epoch json.Number `json:"epoch"`
		}
		if resp, err := http.Get(base + "/healthz"); err == nil {
			err = json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if err == nil && h.Role == role {
				return h.Epoch.String()
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never became %s: %+v", base, role, h)
		}
	}
}
