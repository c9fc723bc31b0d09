package clustertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/ledger"
)

// TestCellPrimaryKilledUnderLoad runs two cells (c1, c2) of two replicas
// each (a leads, b its synchronous standby) behind seckill-router on a
// real etcd, as make cluster does, sells through the router, and kills
// c1's primary with kill -9 mid-sale. c1's standby is promoted (its
// /healthz says primary), the router follows it and the sale goes on in
// c1. Then: every reservation the router acknowledged is found through
// it, with its token; no token is held by two of them; c1's ledger epoch
// moved, so a top-up under the killed primary's epoch is fenced; the
// killed replica restarted rejoins as the standby; seckillctl audit
// (every cell's holdings against the ledger) passes; and seckillctl
// verify is clean on each of the four replicas' data dirs.
func TestCellPrimaryKilledUnderLoad(t *testing.T) {
	bins := buildAll(t)
	logDir := t.TempDir()
	t.Cleanup(func() {
		if t.Failed() {
			keep, _ := os.MkdirTemp("", "seckill-cell-replica-logs-")
			exec.Command("cp", "-r", logDir+"/.", keep).Run()
			t.Logf("process logs copied to %s", keep)
		}
	})
	etcd := etcdtest.Start(t)
	ctl := func(args ...string) ([]byte, error) {
		cmd := exec.Command(bins["seckillctl"], args...)
		cmd.Env = append(os.Environ(), "SECKILL_ADMIN_TOKEN="+token)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return out, fmt.Errorf("seckillctl %v: %v\n%s", args, err, out)
		}
		return out, nil
	}
	cells := []string{"c1", "c2"}
	if out, err := ctl("cells", "publish", "--etcd", etcd.Endpoint, "--campaign", campaign, "--sku", skuID,
		"--sale-limit", fmt.Sprint(saleLimit), "--cells", strings.Join(cells, ","), "--initial", "3000", "--chunk", "50"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}

	// Each cell: replica a, then b, its standby in the sync set.
	procs, bases, dirs := map[string]*proc{}, map[string]string{}, map[string]string{}
	var routes []string
	for _, c := range cells {
		for _, r := range []string{"a", "b"} {
			name := c + "-" + r
			dirs[name] = filepath.Join(t.TempDir(), name)
			procs[name] = startProc(t, name, bins["seckilld"], logDir, "--addr", "127.0.0.1:0", "--data-dir", dirs[name], "--cell", c,
				"--etcd", etcd.Endpoint, "--replica", r, "--replication-addr", "127.0.0.1:0", "--lease-ttl", "2s",
				// A standby whose acknowledgements lag (the race build on a
				// loaded machine) stays in the sync set: dropped before the
				// kill, it could not be promoted (it may lack acknowledged
				// records), and the test is of the promotion.
				"--standby-timeout", "1m",
				"--admin-token", token, "--log-level", "warn")
			addr := procs[name].addr
			bases[name] = "http://" + addr
			if r == "a" {
				awaitState(t, name+" leads", func() bool { return replicaRole(bases[name]) == "primary" })
				routes = append(routes, c+"="+addr)
			}
		}
		awaitState(t, c+"-b in the sync set", func() bool { return slices.Equal(syncSet(bases[c+"-a"]), []string{"b"}) })
	}
	router := startRouter(t, bins, logDir, etcd.Endpoint, routes)

	lc, err := ledger.Dial([]string{etcd.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	l := ledger.New(lc, "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	sale := startSale(router)
	awaitState(t, "200 reservations accepted", func() bool { return sale.count("") >= 200 })
	epochBefore, err := l.Epoch(ctx, "c1")
	if err != nil || epochBefore == 0 {
		t.Fatalf("c1's ledger epoch before the kill: %d %v", epochBefore, err)
	}
	procs["c1-a"].kill() // kill -9, mid-sale
	awaitState(t, "c1-b promoted", func() bool { return replicaRole(bases["c1-b"]) == "primary" })
	inC1 := sale.count("c1")
	awaitState(t, "30 more reservations accepted in c1 after the promotion", func() bool { return sale.count("c1") >= inC1+30 })
	acks := sale.stop()
	t.Logf("%d reservations accepted through the router (%d in c1 before the promotion was seen)", len(acks), inC1)

	// c1's ledger epoch moved: the killed primary's top-ups are fenced.
	epochAfter, err := l.Epoch(ctx, "c1")
	if err != nil || epochAfter <= epochBefore {
		t.Fatalf("c1's ledger epoch after the promotion: %d (before %d) %v", epochAfter, epochBefore, err)
	}
	if _, err := l.Allocate(ctx, ledger.SKU{Campaign: campaign, SKU: skuID}, "c1", 1<<40, epochBefore, 1); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("a top-up under the killed primary's epoch %d: %v", epochBefore, err)
	}

	// Every acknowledged reservation is found through the router, with
	// its token; no token is held by two.
	tokens := map[float64]string{}
	for _, a := range acks {
		if other, ok := tokens[a.token]; ok {
			t.Errorf("token %v sold twice: %s and %s", a.token, other, a.id)
		}
		tokens[a.token] = a.id
		resp, err := http.Get(router + "/v1/reservations/" + a.id)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || v["token_id"] != a.token {
			t.Errorf("acknowledged %s (token %v) after the failover: %d %v", a.id, a.token, resp.StatusCode, v)
		}
	}

	// The killed replica rejoins as c1-b's standby (its unacknowledged
	// tail cut) and is published again.
	procs["c1-a"].start(t)
	awaitState(t, "c1-a rejoins in c1-b's sync set", func() bool { return slices.Equal(syncSet(bases["c1-b"]), []string{"a"}) })

	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		if _, err = ctl("audit", "--etcd", etcd.Endpoint, "--campaign", campaign); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("seckillctl audit never ok: %v", err)
		}
	}
	for name, p := range procs {
		p.term()
		if out, err := ctl("verify", filepath.Join(dirs[name], campaign, skuID)); err != nil {
			t.Errorf("verify %s: %v\n%s", name, err, out)
		}
	}
}

// awaitState polls cond until it holds; a state that does not come within
// 2 minutes (a bound for a loaded machine, never a wait) fails the test.
func awaitState(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 2 minutes: %s", what)
		}
	}
}

// replicaRole is the role a replica's /healthz says ("" when it does not
// answer).
func replicaRole(base string) string {
	var h struct {
		Role string `json:"role"`
	}
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(&h)
	return h.Role
}

// syncSet is the sync set a primary's /admin/replica publishes (nil when
// it does not answer as primary).
func syncSet(base string) []string {
	req, _ := http.NewRequest(http.MethodGet, base+"/admin/replica", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var st struct {
		Role string   `json:"role"`
		Sync []string `json:"sync"`
	}
	if b, _ := io.ReadAll(resp.Body); json.Unmarshal(b, &st) != nil || st.Role != "primary" {
		return nil
	}
	return st.Sync
}

// saleAck is a reservation the router acknowledged (202).
type saleAck struct {
	id, cell string
	token    float64
}

// sale is 8 clients reserving through the router, each user once; a
// request that gets no answer, 503 or 504 is sent again with its
// request_id (never a second reservation).
type sale struct {
	mu   sync.Mutex
	acks []saleAck
	quit chan struct{}
	wg   sync.WaitGroup
}

// loadPace is the least time between two requests of one load worker:
// a kill or a fault needs a sale under way, not the most the machine can
// sell, and unpaced workers take every core for as long as a test waits
// for a lease or a schedule (and every other test of make test with them).
const loadPace = 20 * time.Millisecond

func startSale(router string) *sale {
	s := &sale{quit: make(chan struct{})}
	client := &http.Client{Timeout: 10 * time.Second}
	for w := range 8 {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			pace := time.NewTicker(loadPace)
			defer pace.Stop()
			for i := 0; ; i++ {
				body := fmt.Sprintf(`{"request_id":"kill-%d-%d","user_id":"kill-u%d-%d"}`, w, i, w, i)
				for {
					select {
					case <-s.quit:
						return
					case <-pace.C:
					}
					resp, err := client.Post(router+"/v1/campaigns/"+campaign+"/skus/"+skuID+"/reservations", "application/json", strings.NewReader(body))
					if err != nil {
						time.Sleep(50 * time.Millisecond)
						continue
					}
					var m map[string]any
					json.NewDecoder(resp.Body).Decode(&m)
					resp.Body.Close()
					if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout {
						time.Sleep(50 * time.Millisecond)
						continue
					}
					if resp.StatusCode == http.StatusAccepted {
						id, _ := m["reservation_id"].(string)
						tok, _ := m["token_id"].(float64)
						s.mu.Lock()
						s.acks = append(s.acks, saleAck{id: id, cell: cellOfReservation(id), token: tok})
						s.mu.Unlock()
					}
					break
				}
			}
		}()
	}
	return s
}

// count is the acknowledged reservations of cell ("": of every cell).
func (s *sale) count(cell string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, a := range s.acks {
		if cell == "" || a.cell == cell {
			n++
		}
	}
	return n
}

// stop ends the sale and returns what was acknowledged.
func (s *sale) stop() []saleAck {
	close(s.quit)
	s.wg.Wait()
	return s.acks
}

// cellOfReservation is the cell a celled SKU's reservation id names
// (campaign~sku~cell~seq~tag).
func cellOfReservation(id string) string {
	if parts := strings.Split(id, "~"); len(parts) == 5 {
		return parts[2]
	}
	return ""
}
