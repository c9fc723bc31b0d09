package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
)

// The dashboard in a real browser: headless Chromium (Debian's chromium
// package; .ci/run installs it) driven by chromedp against the real
// seckilld binary, in a 1,400 x 1,000 px window. Without a token the page
// asks for one; a login link (POST /admin/dashboard/login-links, what
// seckillctl dashboard-link asks for) opens it live with nothing typed,
// its session cookie HttpOnly and SameSite=Strict, no code or token left
// in the address. The page follows reserves, a payment, a snapshot (the
// oldest snapshot and the SKUs without one), a pause; nothing overflows
// the window, with this sale's figures and with a busy sale's widest; it
// reconnects by itself across a restart of the server (the session
// outlives it); a typed token works too. SECKILL_CHROMIUM names another
// browser binary; SECKILL_TEST_ARTIFACTS a folder for the screenshots
// (default: the test's temp dir, logged).
func TestDashboardInBrowser(t *testing.T) {
	browser := chromium(t)
	bin := seckilldtest.Build(t, raceEnabled)
	dir := t.TempDir()
	d := startDaemon(t, bin, dir)
	origin, err := url.Parse(d.Base)
	if err != nil {
		t.Fatal(err)
	}

	page, problems := openBrowser(t, browser, origin)
	screenshot := func(name string) {
		png, err := chromedp.Run(page, chromedp.FullScreenshot(100))
		if err != nil {
			t.Logf("screenshot %s: %v", name, err)
			return
		}
		out := os.Getenv("SECKILL_TEST_ARTIFACTS")
		if out == "" {
			out = t.TempDir()
		}
		path := filepath.Join(out, name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Logf("screenshot %s: %v", name, err)
			return
		}
		t.Logf("screenshot: %s", path)
	}
	defer func() { // before the browser's context ends
		if t.Failed() {
			screenshot("dashboard-failed.png")
			t.Logf("page problems so far: %q", problems.list())
		}
	}()
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(page, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string { return pageText(t, page, sel) }
	shows := func(sel, want string) { t.Helper(); pageShows(t, page, sel, want) }
	// figure returns the value the Durability card shows for key.
	figure := func(key string) string {
		js := fmt.Sprintf(`(() => { for (const k of document.querySelectorAll('#t-durability .k'))
			if (k.textContent === %q) return k.nextElementSibling.textContent; return ''; })()`, key)
		s, err := chromedp.Run(page, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("reading %s: %v", key, err)
		}
		return s
	}
	location := func() string {
		href, err := chromedp.Run(page, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(href, testToken) {
			t.Fatalf("the token is in the URL: %s", href)
		}
		return href
	}
	const row = `tr[data-sku="demo/sku-1"] `
	admin := map[string]string{"Authorization": "Bearer " + testToken}
	// A second campaign whose SKU (a long id) has no snapshot.
	long := campaign("runbook-campaign", "15m", map[string]int{"limited-edition-sneaker-size-42-black": 5})
	if r := call(t, http.MethodPut, d.Base+"/admin/campaigns/runbook-campaign", long, admin); r.status != http.StatusCreated {
		t.Fatalf("define: %v", r)
	}

	// Without a token or a session the page asks for the token.
	run("opening the dashboard without a token",
		chromedp.EmulateViewport(1400, 1000),
		chromedp.Navigate(d.Base+"/admin/dashboard"),
		chromedp.WaitVisible(chromedp.ID("token")),
	)
	// A login link (as seckillctl dashboard-link asks for it), opened:
	// the session cookie, HttpOnly and SameSite=Strict, and the dashboard,
	// live, with nothing to type and no code left in the address.
	link := call(t, http.MethodPost, d.Base+"/admin/dashboard/login-links", nil, admin)
	if link.status != http.StatusCreated {
		t.Fatalf("login link: %v", link)
	}
	run("opening the login link", chromedp.Navigate(d.Base+link.str("login_url")))
	shows(row+".available-count", "10000")
	shows("#conn", "live")
	if !hidden(t, page, "#replica") {
		t.Fatal("a single seckilld's dashboard shows a replica set card")
	}
	if href := location(); href != d.Base+"/admin/dashboard" {
		t.Fatalf("after the login link the page is at %s, not %s/admin/dashboard", href, d.Base)
	}
	cookies, err := chromedp.Call(page, network.GetCookies, network.GetCookiesParams{URLs: []string{d.Base + "/admin/stats"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cookies.Cookies) != 1 || cookies.Cookies[0].Name != "seckill_dashboard" || !cookies.Cookies[0].HTTPOnly ||
		cookies.Cookies[0].SameSite != network.CookieSameSiteStrict {
		t.Fatalf("the browser's cookies: %+v", cookies.Cookies)
	}
	if js := text("#login"); !strings.Contains(js, "dashboard-link") {
		t.Fatalf("the login form does not mention login links: %q", js)
	}

	// Reserve 3: the page shows 3 fewer.
	var reservations []string
	for i := range 3 {
		r, err := tryReserve(d.Base, "demo", "sku-1", fmt.Sprintf("dash-r%d", i), fmt.Sprintf("dash-u%d", i))
		if err != nil || r.status != http.StatusAccepted {
			t.Fatalf("reserve: %v %v", r, err)
		}
		reservations = append(reservations, r.str("reservation_id"))
	}
	shows(row+".available-count", "9997")
	shows(row+".reserved-count", "3")

	// Pay one: confirmed 1.
	pay := call(t, http.MethodPost, d.Base+"/v1/reservations/"+reservations[0]+"/payment",
		map[string]any{"payment_id": "dash-p0", "amount": 100}, nil)
	if pay.status != http.StatusOK {
		t.Fatalf("pay: %v", pay)
	}
	shows(row+".confirmed-count", "1")

	// A snapshot of one SKU: the totals show its age and the one without.
	if r := call(t, http.MethodPost, d.Base+"/admin/campaigns/demo/skus/sku-1/snapshot", nil, admin); r.status != http.StatusOK {
		t.Fatalf("snapshot: %v", r)
	}
	for deadline := time.Now().Add(browserBound); !strings.HasSuffix(figure("oldest snapshot"), " ago · 1 without"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("oldest snapshot shows %q, want \"<age> ago · 1 without\"", figure("oldest snapshot"))
		}
	}

	// Pause: PAUSED.
	if r := call(t, http.MethodPost, d.Base+"/admin/campaigns/demo/skus/sku-1/pause", nil, admin); r.status != http.StatusOK {
		t.Fatalf("pause: %v", r)
	}
	shows(row+".status", "PAUSED")

	// At 1,400 px nothing is wider than the window, and no cell's content
	// is wider than its cell (the SKU id is cut with an ellipsis on
	// purpose): the durability column shows whole. Checked on the widest
	// figures a busy sale shows (drawn by the page's own onStats, measured
	// before the next sample redraws it), then on this server's.
	wide, err := json.Marshal(wideStats())
	if err != nil {
		t.Fatal(err)
	}
	overflows := func(draw string) []string {
		t.Helper()
		bad, err := chromedp.Run(page, chromedp.Evaluate[[]string](`(() => {`+draw+`
		const bad = [];
		const doc = document.documentElement;
		if (window.innerWidth !== 1400) bad.push('window ' + window.innerWidth + ' px wide, not 1400');
		if (doc.scrollWidth > window.innerWidth) bad.push('page ' + doc.scrollWidth + ' px wide in ' + window.innerWidth);
		for (const c of document.querySelectorAll('#rows th, #rows td:not(.id), .card')) {
			if (c.scrollWidth > c.clientWidth + 1) bad.push((c.className || c.tagName) + ': ' + c.scrollWidth + ' px in ' + c.clientWidth);
			if (c.getBoundingClientRect().right > window.innerWidth) bad.push((c.className || c.tagName) + ' ends past the window');
		}
		return bad;
	})()`))
		if err != nil {
			t.Fatal(err)
		}
		return bad
	}
	if bad := overflows("onStats(" + string(wide) + ");"); len(bad) > 0 {
		t.Errorf("overflow at 1400 px with a busy sale's figures: %q", bad)
	}
	screenshot("dashboard-wide.png")
	shows(row+".available-count", "9997") // the next sample's
	if bad := overflows(""); len(bad) > 0 {
		t.Errorf("overflow at 1400 px: %q", bad)
	}
	screenshot("dashboard.png")

	// Stop the server: the page says so. Restart it on the same port: the
	// page reconnects by itself (the session cookie is signed, not kept:
	// it outlives the restart) and shows the restarted server's numbers.
	if err := d.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-d.Exited; err != nil {
		t.Fatalf("seckilld exit after SIGTERM: %v", err)
	}
	shows("#conn", "reconnecting")
	d = seckilldtest.Start(t, bin, dir, []string{"SECKILL_ADMIN_TOKEN=" + testToken}, "--addr", origin.Host)
	if r := call(t, http.MethodPost, d.Base+"/admin/campaigns/demo/skus/sku-1/resume", nil, admin); r.status != http.StatusOK {
		t.Fatalf("resume: %v", r)
	}
	shows("#conn", "live")
	shows(row+".status", "OPEN")
	shows(row+".available-count", "9997")
	shows(row+".confirmed-count", "1")

	// The token typed instead ("change token"): kept in the tab, never in
	// the URL.
	run("giving the token",
		chromedp.Click(chromedp.ID("forget")),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), testToken),
		chromedp.Click(chromedp.CSS(`#login button[type="submit"]`)),
	)
	shows("#conn", "live")
	shows(row+".confirmed-count", "1")
	location()

	if p := problems.list(); len(p) > 0 {
		t.Fatalf("the page misbehaved:\n%s", strings.Join(p, "\n"))
	}
}

// browserBound bounds each wait of the browser test for what the page
// shows: the page shows it within a second on a quiet machine; the bound
// is for a loaded one.
const browserBound = time.Minute

// wideStats is a /admin/stats document with the widest figures a busy
// sale shows: long ids, the longest status, millions of reservations,
// seconds of latency, a cell's grants. Its time is long past, so the page
// draws it without adding it to its sparklines.
func wideStats() map[string]any {
	row := func(campaignID, skuID, status, cell string) map[string]any {
		r := map[string]any{
			"campaign_id": campaignID, "sku_id": skuID, "status": status,
			"sale_limit": 10_000_000, "available": 7_999_999, "reserved": 1_000_000, "confirmed": 1_000_001,
			"granted": 0, "returned": 0, "invariant_ok": true,
			"reservations": map[string]any{"pending_payment": 1_000_000, "paid": 1_000_001, "closed": 9_876_543, "held_closed": 0, "total": 11_876_544},
			"inbox_depth":  123_456, "oldest_wait_ms": 2_999.5, "max_queue_wait_ms": 3_000, "permits_in_flight": 1_000_000,
			"commit_wait_ms": 2_999.5, "commit_latency_ms": 2_999.5, "expected_wait_ms": 5_999,
			"permits_bound": 1_000_000, "consumer_rate_per_second": 123_456.7,
			"outcomes_per_second": map[string]any{"accepted": 123_456.7, "sold_out_fast": 1_234_567.8, "sold_out_actor": 12_345.6,
				"queue_full": 123_456.7, "throttled": 123_456.7, "already_purchased": 12_345.6, "entry_pass_refused": 12_345.6, "subject_limit_refused": 1_234.5,
				"server_errors": 12_345.6, "all": 2_345_678.9},
			"reserve_p50_ms": 1_234.5, "reserve_p99_ms": 2_999.9, "unpaid": 1_000_000, "unpaid_oldest_age_seconds": 899.5,
			"expiries_per_minute": 123_456.7, "refunds_required": 12_345, "fsync_p99_ms": 1_234.5, "records_per_fsync": 1_234.5,
			"durable_index": 123_456_789, "last_index": 123_456_790, "snapshot_age_seconds": 86_000, "skus_without_snapshot": 0,
			"feed_lag_records": nil,
		}
		if cell != "" {
			r["cell"], r["granted"], r["returned"], r["available"] = cell, 3_000_000, 999_999, 1
		}
		return r
	}
	long := strings.Repeat("x", 60)
	skus := []any{
		row("campaign-"+long[:55], "sku-"+long, "FINAL_SOLD_OUT", "cell-number-12"),
		row("demo", "sku-1", "TEMP_SOLD_OUT", ""),
		row("demo", "sku-2", "QUEUE_FULL", ""),
	}
	totals := row("", "", "", "")
	totals["granted"], totals["returned"], totals["skus_without_snapshot"] = 3_000_000, 999_999, 1_234
	return map[string]any{"at": "2000-01-01T00:00:00Z", "interval_seconds": 1, "sku_count": 10_000, "totals": totals, "skus": skus}
}

// pageProblems collects what the page did wrong: JavaScript exceptions,
// console errors, browser errors, requests to another host.
type pageProblems struct {
	mu   sync.Mutex
	seen []string
}

func (p *pageProblems) add(s string) { p.mu.Lock(); p.seen = append(p.seen, s); p.mu.Unlock() }

func (p *pageProblems) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// openBrowser starts headless Chromium (the binary browser) in a 1,400 x
// 1,000 px window and returns its tab, whose problems (every JavaScript
// exception, console error, browser error and request to a host other
// than origin's) are collected. It stops with the test.
func openBrowser(t *testing.T, browser string, origin *url.URL) (context.Context, *pageProblems) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.NoSandbox, // as root Chromium refuses to start without it (crbug.com/638180)
		chromedp.WindowSize(1400, 1000),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	page, cancelPage := chromedp.NewContext(alloc)
	t.Cleanup(cancelPage)

	// Every JavaScript exception, console error and request to another
	// host fails the test.
	problems := &pageProblems{}
	problem := func(format string, args ...any) { problems.add(fmt.Sprintf(format, args...)) }
	// Listen starts the browser; the tab enables the Runtime and Network
	// domains itself.
	err := chromedp.Listen(page, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			desc := ""
			if d.Exception != nil {
				desc = d.Exception.Description
			}
			problem("JavaScript exception at %s:%d:%d: %s %s", d.URL, d.LineNumber+1, d.ColumnNumber+1, d.Text, desc)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				problem("console.%s: %s", ev.Type, strings.Join(args, " "))
			}
		case *cdplog.EventEntryAdded:
			// The browser's own messages: a Content Security Policy
			// violation, a failed script. A failed request is expected
			// while the server restarts (the page retries it).
			if e := ev.Entry; e.Level == cdplog.EntryLevelError && e.Source != cdplog.EntrySourceNetwork {
				problem("browser log (%s): %s %s", e.Source, e.Text, e.URL)
			}
		case *network.EventRequestWillBeSent:
			u, err := url.Parse(ev.Request.URL)
			if err != nil || (u.Scheme != "data" && u.Host != origin.Host) {
				problem("request to another host: %s", ev.Request.URL)
			}
		}
	})
	if err != nil {
		t.Fatalf("starting %s: %v", browser, err)
	}
	return page, problems
}

// pageText returns the text of the first element sel matches ("" if none).
func pageText(t *testing.T, page context.Context, sel string) string {
	t.Helper()
	js := fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel)
	s, err := chromedp.Run(page, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

// pageShows waits until sel's text is want: a bound, not a wait (a loaded
// machine may take long).
func pageShows(t *testing.T, page context.Context, sel, want string) {
	t.Helper()
	deadline := time.Now().Add(browserBound)
	for got := pageText(t, page, sel); got != want; got = pageText(t, page, sel) {
		if time.Now().After(deadline) {
			t.Fatalf("%s shows %q, not %q within %v", sel, got, want, browserBound)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// chromium returns the browser binary: $SECKILL_CHROMIUM, or chromium on
// the PATH (.ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("SECKILL_CHROMIUM"); b != "" {
		return b
	}
	b, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is needed for the dashboard's browser test (apt-get install chromium, or set SECKILL_CHROMIUM): %v", err)
	}
	return b
}

// hidden reports whether sel matches an element that is hidden.
func hidden(t *testing.T, page context.Context, sel string) bool {
	t.Helper()
	h, err := chromedp.Run(page, chromedp.Evaluate[bool](fmt.Sprintf(`(document.querySelector(%q) || {}).hidden === true`, sel)))
	if err != nil {
		t.Fatalf("reading %s: %v", sel, err)
	}
	return h
}
