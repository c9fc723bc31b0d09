// Package clustertest is the multi-process fault test of cells: a real
// etcd (3.7.3), four seckilld cells (fsync on) each reaching etcd through
// a proxy the test can cut, and a seckill-router, all on loopback; seeded
// load through the router while cells are killed, paused, partitioned from
// etcd and etcd itself is paused.
package clustertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	cellmap "github.com/seckill/seckill/cells"
	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/internal/proctest"
	"github.com/seckill/seckill/internal/testbin"
	"github.com/seckill/seckill/ledger"
)

// c4Stuck bounds each step of c4's cut in TestCellsUnderFaults: the test
// waits for the states it needs, and fails only when one does not come
// for this long (a loaded machine makes every step slower, never this
// slow).
const c4Stuck = 3 * time.Minute

const (
	campaign  = "demo"
	skuID     = "sku-1"
	saleLimit = 10_000
	token     = "cluster-test-token"
)

// buildAll compiles seckilld, seckill-router and seckillctl with the
// fault points (tag faultinject: c1 loses the answer of its first top-up,
// cells/fault_on.go) and the test's planted-bug tags (plantedTags, from
// the build tags of the test), once for all the tests of the package
// (testbin), and returns their paths by name.
func buildAll(t *testing.T) map[string]string {
	t.Helper()
	names := []string{"seckilld", "seckill-router", "seckillctl"}
	pkgs := make([]string, len(names))
	for i, name := range names {
		pkgs[i] = "github.com/seckill/seckill/cmd/" + name
	}
	dir := testbin.Dir(t, []string{"-tags", strings.Join(append([]string{"faultinject"}, plantedTags...), ",")}, pkgs...)
	bins := map[string]string{}
	for _, name := range names {
		bins[name] = filepath.Join(dir, name)
	}
	return bins
}

// TestMain builds each set of commands once for all the tests (testbin).
func TestMain(m *testing.M) { testbin.Main(m) }

// proc is one child process, restartable on the same arguments.
type proc struct {
	name string
	bin  string
	args []string
	log  *os.File
	cmd  *exec.Cmd
	done chan error
	// addr is the host:port its "listening on http://" line named.
	addr string
}

func startProc(t *testing.T, name, bin, logDir string, args ...string) *proc {
	t.Helper()
	f, err := os.Create(filepath.Join(logDir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, bin: bin, args: args, log: f}
	p.start(t)
	t.Cleanup(p.kill)
	return p
}

// start runs the process and waits for its "listening on" line. Started
// with --addr 127.0.0.1:0 (the kernel picks a port as it binds: a port
// picked before, free when picked, may be taken by a parallel test's
// process before the child binds it, and the child exits), its later
// starts listen on the port it was given, as a restarted server would.
func (p *proc) start(t *testing.T) {
	t.Helper()
	p.cmd = exec.Command(p.bin, p.args...)
	p.cmd.Env = append(os.Environ(), "SECKILL_FAULT_LOSE_TOPUP_ANSWER=c1")
	p.cmd.Stderr = p.log
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.done = make(chan error, 1)
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			fmt.Fprintln(p.log, "stdout:", sc.Text())
			if _, rest, ok := strings.Cut(sc.Text(), " listening on http://"); ok {
				addr, _, _ := strings.Cut(rest, " ")
				ready <- addr
			}
		}
	}()
	go func(cmd *exec.Cmd, done chan error) { done <- cmd.Wait() }(p.cmd, p.done)
	select {
	case p.addr = <-ready:
		if i := slices.Index(p.args, "--addr"); i >= 0 && i+1 < len(p.args) {
			p.args[i+1] = p.addr
		}
	case err := <-p.done:
		t.Fatalf("%s exited at start: %v (log %s)", p.name, err, p.log.Name())
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not start (log %s)", p.name, p.log.Name())
	}
}

func (p *proc) signal(s syscall.Signal) { _ = p.cmd.Process.Signal(s) }

// pause stops the process (SIGSTOP) and returns once all its threads are
// stopped, so that no request sent after it is answered before the stop.
func (p *proc) pause(t *testing.T) {
	t.Helper()
	if err := proctest.Pause(p.cmd.Process); err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
}

// kill sends SIGKILL (after SIGCONT) and waits.
func (p *proc) kill() {
	if p.cmd == nil || p.cmd.ProcessState != nil {
		return
	}
	p.signal(syscall.SIGCONT)
	_ = p.cmd.Process.Kill()
	<-p.done
}

// term stops it cleanly and waits up to 30 s.
func (p *proc) term() {
	p.signal(syscall.SIGCONT)
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.kill()
	}
}

// startCell starts seckilld as cell on a port of its own with data dir
// dir, reaching etcd at etcdAddr (the log level is warn's unless given),
// and returns its address and process.
func startCell(t *testing.T, bins map[string]string, logDir, cell, dir, etcdAddr string) (string, *proc) {
	t.Helper()
	p := startProc(t, cell, bins["seckilld"], logDir, "--addr", "127.0.0.1:0", "--data-dir", dir, "--cell", cell,
		"--etcd", etcdAddr, "--admin-token", token, "--log-level", "warn")
	return p.addr, p
}

// startRouter starts seckill-router on a free port over the cells'
// routes (cell=host:port), with extra flags, and returns its base URL.
func startRouter(t *testing.T, bins map[string]string, logDir, etcdAddr string, routes []string, extra ...string) string {
	t.Helper()
	name := "router"
	if len(extra) > 0 {
		name = "router-" + strings.Join(extra, "")
	}
	args := append([]string{"--addr", "127.0.0.1:0", "--etcd", etcdAddr, "--cells", strings.Join(routes, ",")}, extra...)
	return "http://" + startProc(t, name, bins["seckill-router"], logDir, args...).addr
}

// metricValue reads one sample's value from a /metrics page (-1 when
// absent or unreadable).
func metricValue(t *testing.T, client *http.Client, url, prefix string) float64 {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, prefix) {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
				return v
			}
		}
	}
	return -1
}

// ownerOf is the cell the test's published map (an even map of cellIDs,
// version 1, as seckillctl cells publish makes it) gives user.
func ownerOf(cellIDs []string, user string) string {
	m, err := cellmap.EvenMap(1, cellIDs)
	if err != nil {
		panic(err)
	}
	p := cellmap.Published{Definition: sku.Definition{CampaignID: campaign, SKUID: skuID}, Map: m}
	return p.CellOf(user)
}

// getAudit reads cell's admin audit of the test's SKU at base, within the
// client's timeout.
func getAudit(client *http.Client, base, cell string) (cellmap.CellAudit, error) {
	ctx, cancel := context.WithTimeout(context.Background(), client.Timeout)
	defer cancel()
	var a cellmap.CellAudit
	return a, cellmap.FetchCellAudit(ctx, base, ledger.SKU{Campaign: campaign, SKU: skuID}, cell, token, &a)
}

// TestCellsUnderFaults is the fault test. Four cells, sale_limit
// 10,000 = 4 × 2,400 + 400, top-ups of 50, a 3 s payment window; seeded
// load with repeated users and request_ids, 60% pay, 20% cancel, the rest
// expire. During the load: a second process on c1's data dir (refused),
// kill -9 of c3 and its restart, SIGSTOP of c2, c4's etcd link cut while
// its pool is below a chunk (its top-up times out and is retried), c1's
// first top-up committed with its answer lost (the faultinject point),
// etcd SIGSTOPped, a return asked of c1. Every 100 ms: Σ (reserved +
// confirmed) ≤ sale_limit. At the end: the ledger's invariants, each
// cell's holdings equal the ledger's, seckillctl audit ok, each cell's
// GRANTs (read from its stopped data dir by seckillctl verify) equal
// etcd's allocations of it, no token held by two reservations across
// cells, one live purchase per user across cells.
func TestCellsUnderFaults(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (planted: %v)", seed, plantedTags)
	bins := buildAll(t)
	logDir := t.TempDir()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("process logs kept in %s", logDir)
			keep, _ := os.MkdirTemp("", "seckill-cells-logs-")
			exec.Command("cp", "-r", logDir+"/.", keep).Run()
			t.Logf("copied to %s", keep)
		}
	})
	etcd := etcdtest.Start(t)

	cells := []string{"c1", "c2", "c3", "c4"}
	start := time.Now().Add(-time.Second).UTC().Format(time.RFC3339)
	ctl := func(args ...string) ([]byte, error) {
		cmd := exec.Command(bins["seckillctl"], args...)
		cmd.Env = append(os.Environ(), "SECKILL_ADMIN_TOKEN="+token)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return out, fmt.Errorf("seckillctl %v: %v\n%s", args[0], err, stderr.String())
		}
		return out, nil
	}
	if out, err := ctl("cells", "publish", "--etcd", etcd.Endpoint, "--campaign", campaign, "--sku", skuID,
		"--sale-limit", fmt.Sprint(saleLimit), "--cells", strings.Join(cells, ","), "--initial", "2400", "--chunk", "50",
		"--start", start, "--payment-window", "3s"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}

	addrs := map[string]string{}
	dirs := map[string]string{}
	proxies := map[string]*etcdtest.Proxy{}
	procs := map[string]*proc{}
	var routes []string
	for _, c := range cells {
		px, err := etcdtest.NewProxy(etcd.Endpoint)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(px.Close)
		dirs[c], proxies[c] = filepath.Join(t.TempDir(), c), px
		addrs[c], procs[c] = startCell(t, bins, logDir, c, dirs[c], px.Addr)
		routes = append(routes, c+"="+addrs[c])
	}
	router := startRouter(t, bins, logDir, etcd.Endpoint, routes)

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	sampler := &http.Client{Timeout: 300 * time.Millisecond}

	// The sampler: Σ over cells of (reserved + confirmed) ≤ sale_limit at
	// every sample; a cell that does not answer counts with its last one.
	stopSampling := make(chan struct{})
	var samples, overSamples atomic.Int64
	var worst atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		last := map[string]cellmap.CellAudit{}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
			var sum int64
			for _, c := range cells {
				if a, err := getAudit(sampler, "http://"+addrs[c], c); err == nil {
					last[c] = a
				}
				sum += int64(last[c].Reserved) + int64(last[c].Confirmed)
			}
			samples.Add(1)
			if sum > saleLimit {
				overSamples.Add(1)
			}
			if sum > worst.Load() {
				worst.Store(sum)
			}
		}
	}()

	// The load.
	stopLoad := make(chan struct{})
	var accepted, paid, cancelled, soldOut, wrongCell, unavailable atomic.Int64
	post := func(url, body string) (int, map[string]any) {
		resp, err := client.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		var m map[string]any
		b, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
	for w := 0; w < 24; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			// Paced (at most 1,200 attempts/s from the 24): the faults need
			// a sale under way, not the most the machine can answer, and
			// unpaced workers spin on sold-out answers through the whole
			// schedule, taking the cores from every other test.
			pace := time.NewTicker(loadPace)
			defer pace.Stop()
			for {
				select {
				case <-stopLoad:
					return
				case <-pace.C:
				}
				user := rng.IntN(40_000)
				body := fmt.Sprintf(`{"request_id":"r%d-%d","user_id":"u%d"}`, user, rng.IntN(2), user)
				var code int
				var m map[string]any
				for try := 0; try < 3; try++ { // retries keep the request_id
					code, m = post(router+"/v1/campaigns/"+campaign+"/skus/"+skuID+"/reservations", body)
					if code != 0 && code != 503 && code != 504 && code != 429 {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				switch code {
				case 202:
					accepted.Add(1)
				case 409:
					if m["error"] == "SOLD_OUT" {
						soldOut.Add(1)
					}
					continue
				case 421:
					wrongCell.Add(1)
					continue
				default:
					unavailable.Add(1)
					continue
				}
				id, _ := m["reservation_id"].(string)
				switch p := rng.IntN(100); {
				case p < 60:
					if c, _ := post(router+"/v1/reservations/"+id+"/payment", fmt.Sprintf(`{"payment_id":"p-%s","amount":100}`, strings.ReplaceAll(id, "~", "-"))); c == 200 {
						paid.Add(1)
					}
				case p < 80:
					if c, _ := post(router+"/v1/reservations/"+id+"/cancel", `{}`); c == 200 {
						cancelled.Add(1)
					}
				}
			}
		}()
	}

	// c4's etcd link is cut while its pool is low (available below a
	// chunk), and stays cut until c4 asks for a top-up (its pool below half
	// a chunk), and its metrics say that a top-up attempt ended without an
	// answer (an etcd operation's timeout, 2 s) and that its ledger is
	// unreachable: that top-up is retried with the same seq once the link
	// heals (one allocation per (cell, seq) is checked at the end). Each
	// step waits for the state it needs, however slowly a loaded machine
	// runs the load (whose unpaid reservations come back every 3 s): the
	// test drains c4 itself, buying and paying for users the map gives c4,
	// directly at c4, from the start until c4 asks for its top-up after the
	// cut. Only a step stuck for c4Stuck fails.
	var c4AvailableAtCut, c4RetriesInCut atomic.Int64
	c4AvailableAtCut.Store(-1)
	c4Done := make(chan struct{})
	c4 := "http://" + addrs["c4"]
	c4Metrics := c4 + "/metrics"
	stopDrain := make(chan struct{})
	var drainers sync.WaitGroup
	for w := range 4 {
		drainers.Add(1)
		go func() {
			defer drainers.Done()
			for u := 0; ; u++ {
				select {
				case <-stopDrain:
					return
				default:
				}
				user := fmt.Sprintf("drain-%d-%d", w, u)
				if ownerOf(cells, user) != "c4" {
					continue
				}
				code, m := post(c4+"/v1/campaigns/"+campaign+"/skus/"+skuID+"/reservations", fmt.Sprintf(`{"request_id":"%s","user_id":"%s"}`, user, user))
				if id, _ := m["reservation_id"].(string); code == 202 {
					post(c4+"/v1/reservations/"+id+"/payment", fmt.Sprintf(`{"payment_id":"p-%s","amount":100}`, user))
				} else if code == 409 {
					time.Sleep(20 * time.Millisecond) // sold out until the top-up: nothing to drain
				}
			}
		}()
	}
	go func() {
		defer close(c4Done)
		defer func() { close(stopDrain); drainers.Wait() }()
		wait := func(what string, cond func() bool) bool {
			for since := time.Now(); !cond(); time.Sleep(20 * time.Millisecond) {
				if time.Since(since) >= c4Stuck {
					t.Errorf("c4: not within %v: %s", c4Stuck, what)
					return false
				}
			}
			return true
		}
		if !wait("its pool below a chunk", func() bool {
			n := metricValue(t, client, c4Metrics, `seckill_sku_tokens{campaign_id="`+campaign+`",sku_id="`+skuID+`",state="AVAILABLE"}`)
			if n < 0 || n >= 50 {
				return false
			}
			proxies["c4"].Cut()
			c4AvailableAtCut.Store(int64(n))
			return true
		}) {
			return
		}
		defer proxies["c4"].Heal()
		if !wait("a top-up pending after the cut", func() bool {
			return metricValue(t, client, c4Metrics, "seckill_cell_top_up_pending{") == 1
		}) || !wait("a top-up retried while its link is cut", func() bool {
			return metricValue(t, client, c4Metrics, "seckill_cell_top_up_retries{") >= 1
		}) || !wait("its ledger unreachable while its link is cut", func() bool {
			return metricValue(t, client, c4Metrics, "seckill_cell_ledger_reachable{") == 0
		}) {
			return
		}
		c4RetriesInCut.Store(int64(metricValue(t, client, c4Metrics, "seckill_cell_top_up_retries{")))
	}()

	// The faults.
	at := func(d time.Duration) { time.Sleep(d) }
	at(time.Second)
	second := exec.Command(bins["seckilld"], "--addr", "127.0.0.1:0", "--data-dir", dirs["c1"], "--cell", "c1",
		"--etcd", etcd.Endpoint, "--admin-token", token)
	if out, err := second.CombinedOutput(); err == nil {
		t.Errorf("a second process on c1's data dir started:\n%s", out)
	}
	at(500 * time.Millisecond)
	procs["c3"].kill() // kill -9
	at(500 * time.Millisecond)
	procs["c2"].pause(t)
	at(time.Second)
	at(2 * time.Second)
	procs["c3"].start(t) // same dir, same port
	at(time.Second)
	procs["c2"].signal(syscall.SIGCONT)
	at(time.Second)
	if out, err := ctl("cells", "return", "--etcd", etcd.Endpoint, "--campaign", campaign, "--sku", skuID,
		"--cell", "c1", "--units", "100", "--id", "1"); err != nil {
		t.Errorf("%v\n%s", err, out)
	}
	at(time.Second)
	if err := etcd.Pause(); err != nil {
		t.Fatal(err)
	}
	at(2 * time.Second)
	if err := etcd.Resume(); err != nil {
		t.Fatal(err)
	}
	at(2 * time.Second)
	<-c4Done // the load goes on until c4's link was cut and healed
	at(time.Second)
	close(stopLoad)
	time.Sleep(200 * time.Millisecond)
	close(stopSampling)
	wg.Wait()
	t.Logf("load: %d accepted, %d paid, %d cancelled, %d sold out, %d wrong cell, %d unavailable; %d samples, worst Σ %d",
		accepted.Load(), paid.Load(), cancelled.Load(), soldOut.Load(), wrongCell.Load(), unavailable.Load(), samples.Load(), worst.Load())
	if c4AvailableAtCut.Load() < 0 {
		t.Errorf("c4's pool never went below a chunk: its etcd link was not cut")
	}
	t.Logf("c4's etcd link cut with %d units available; %d top-up retries before it healed", c4AvailableAtCut.Load(), c4RetriesInCut.Load())
	if c4RetriesInCut.Load() < 1 {
		t.Errorf("c4's top-up retries while its link was cut: %d, want at least one", c4RetriesInCut.Load())
	}
	if overSamples.Load() > 0 {
		t.Errorf("%d samples with Σ (reserved + confirmed) > %d (worst %d)", overSamples.Load(), saleLimit, worst.Load())
	}
	if accepted.Load() == 0 || wrongCell.Load() != 0 {
		t.Errorf("accepted %d, wrong cell through the router %d", accepted.Load(), wrongCell.Load())
	}

	// A user of another cell, asked directly: 421 naming the cell.
	for u := 0; ; u++ {
		code, m := post("http://"+addrs["c1"]+"/v1/campaigns/"+campaign+"/skus/"+skuID+"/reservations",
			fmt.Sprintf(`{"request_id":"direct-%d","user_id":"direct-%d"}`, u, u))
		if code == 421 {
			if d, _ := m["detail"].(string); m["error"] != "WRONG_CELL" || !strings.Contains(d, "cell c") {
				t.Errorf("421 body %v", m)
			}
			break
		}
		if u > 50 {
			t.Fatalf("no 421 from c1 for 50 users (the last: %d %v)", code, m)
		}
	}

	// Reconciliation: every cell's holdings equal the ledger's, and the
	// ledger's invariants hold (seckillctl audit).
	var audit []byte
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for {
		audit, err = ctl("audit", "--etcd", etcd.Endpoint, "--campaign", campaign)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("seckillctl audit never ok: %v\n%s", err, audit)
	}
	lc, err := ledger.Dial([]string{etcd.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := ledger.New(lc, "").Read(ctx, ledger.SKU{Campaign: campaign, SKU: skuID})
	if err != nil {
		t.Fatal(err)
	}
	if bad := st.Check(); len(bad) != 0 {
		t.Fatalf("ledger: %v", bad)
	}
	if len(st.Returns["c1"]) != 1 {
		t.Errorf("c1's return: %v", st.Returns["c1"])
	}
	for _, c := range cells { // one allocation per (cell, seq), no seq skipped
		for i, a := range st.Allocs[c] {
			if a.Seq != uint64(i+1) {
				t.Errorf("%s's allocations: seq %d at position %d", c, a.Seq, i+1)
			}
		}
	}
	var topUps int
	for _, c := range cells {
		topUps += len(st.Allocs[c]) - 1
	}
	t.Logf("ledger: %d top-ups, granted %d, returned %d, free %v, next token %d", topUps, st.Pool.Granted, st.Pool.Returned, st.Pool.Free, st.Pool.NextToken)

	// Across cells: no token held by two reservations, one live purchase
	// per user (from each stopped cell's data dir).
	for _, c := range cells {
		procs[c].term()
	}
	// Each cell's GRANTs, as its own log holds them (seckillctl verify of
	// its stopped data dir), are etcd's allocations of that cell: the
	// same seqs, epochs and token ranges, none missing, none extra.
	final, err := ledger.New(lc, "").Read(ctx, ledger.SKU{Campaign: campaign, SKU: skuID})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cells {
		out, err := ctl("verify", filepath.Join(dirs[c], campaign, skuID))
		if err != nil {
			t.Fatalf("verify %s: %v\n%s", c, err, out)
		}
		var v struct {
			SKUs []struct {
				Cell struct {
					Grants []struct {
						Seq    uint64           `json:"seq"`
						Epoch  uint64           `json:"epoch"`
						Ranges []sku.TokenRange `json:"ranges"`
					} `json:"grants"`
				} `json:"cell"`
			} `json:"skus"`
		}
		if err := json.Unmarshal(out, &v); err != nil || len(v.SKUs) != 1 {
			t.Fatalf("verify %s: %v\n%s", c, err, out)
		}
		var logged, stored []string
		for _, g := range v.SKUs[0].Cell.Grants {
			var rs []string
			for _, r := range g.Ranges {
				rs = append(rs, r.String())
			}
			logged = append(logged, fmt.Sprint(g.Seq, g.Epoch, rs))
		}
		for _, a := range final.Allocs[c] {
			var rs []string
			for _, r := range a.Ranges {
				rs = append(rs, r.String())
			}
			stored = append(stored, fmt.Sprint(a.Seq, a.Epoch, rs))
		}
		if strings.Join(logged, "; ") != strings.Join(stored, "; ") {
			t.Errorf("%s's GRANTs are not etcd's allocations:\nlog:  %v\netcd: %v", c, logged, stored)
		}
	}

	holder := map[float64]string{}
	live := map[string]string{}
	for _, c := range cells {
		out, err := ctl("export", filepath.Join(dirs[c], campaign, skuID), "--format", "jsonl")
		if err != nil {
			t.Fatalf("export %s: %v", c, err)
		}
		for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
			var r map[string]any
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatalf("export %s: %v: %s", c, err, line)
			}
			id := fmt.Sprintf("%s/%v", c, r["reservation_id"])
			if held, _ := r["holds_token"].(bool); held {
				tok := r["token_id"].(float64)
				if prev, ok := holder[tok]; ok {
					t.Errorf("token %v held by %s and %s", tok, prev, id)
				}
				holder[tok] = id
			}
			if s := r["state"]; s == "PENDING_PAYMENT" || s == "PAID" {
				u := r["user_id"].(string)
				if prev, ok := live[u]; ok {
					t.Errorf("user %s has two live purchases: %s and %s", u, prev, id)
				}
				live[u] = id
			}
		}
	}
}
