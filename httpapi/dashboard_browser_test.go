package httpapi_test

import (
	"context"
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
// seckilld binary. SECKILL_CHROMIUM names another browser binary;
// SECKILL_TEST_ARTIFACTS a folder for the screenshot (default: the test's
// temp dir, logged).
func TestDashboardInBrowser(t *testing.T) {
	browser := os.Getenv("SECKILL_CHROMIUM")
	if browser == "" {
		var err error
		if browser, err = exec.LookPath("chromium"); err != nil {
			t.Fatalf("chromium is needed for the dashboard's browser test (apt-get install chromium, or set SECKILL_CHROMIUM): %v", err)
		}
	}
	bin := seckilldtest.Build(t, raceEnabled)
	dir := t.TempDir()
	d := startDaemon(t, bin, dir)
	origin, err := url.Parse(d.Base)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()

	// A bound for a browser that hangs, however loaded the machine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.NoSandbox, // as root Chromium refuses to start without it (crbug.com/638180)
		chromedp.WindowSize(1400, 1000),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	page, cancelPage := chromedp.NewContext(alloc)
	defer cancelPage()

	// Every JavaScript exception, console error and request to another
	// host fails the test.
	var mu sync.Mutex
	var problems []string
	problem := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	// Listen starts the browser; the tab enables the Runtime and Network
	// domains itself.
	err = chromedp.Listen(page, func(ev any) {
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
			mu.Lock()
			t.Logf("page problems so far: %q", problems)
			mu.Unlock()
		}
	}()
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(page, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// text returns the text of the first element sel matches ("" if none).
	text := func(sel string) string {
		js := fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel)
		s, err := chromedp.Run(page, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return s
	}
	// shows waits until sel's text is want (a minute bounds a page that
	// never gets there; the page updates from the stats stream once a
	// second, later on a loaded machine).
	shows := func(sel, want string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for got := text(sel); got != want; got = text(sel) {
			if time.Now().After(deadline) {
				t.Fatalf("%s shows %q, not %q, after a minute", sel, got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	const row = `tr[data-sku="demo/sku-1"] `

	run("opening the dashboard and giving the token",
		chromedp.Navigate(d.Base+"/admin/dashboard"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), testToken),
		chromedp.Click(chromedp.CSS(`#login button[type="submit"]`)),
	)
	shows(row+".available-count", "10000")
	shows("#conn", "live")
	href, err := chromedp.Run(page, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(href, testToken) {
		t.Fatalf("the token is in the URL: %s", href)
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

	// Pause: PAUSED.
	admin := map[string]string{"Authorization": "Bearer " + testToken}
	if r := call(t, http.MethodPost, d.Base+"/admin/campaigns/demo/skus/sku-1/pause", nil, admin); r.status != http.StatusOK {
		t.Fatalf("pause: %v", r)
	}
	shows(row+".status", "PAUSED")
	screenshot("dashboard.png")

	// Stop the server: the page says so. Restart it on the same port: the
	// page reconnects by itself and shows the restarted server's numbers.
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

	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Fatalf("the page misbehaved:\n%s", strings.Join(problems, "\n"))
	}
	t.Logf("the browser test took %v", time.Since(began).Round(time.Millisecond))
}
