// Command hademo is make ha-demo: a replica set of two seckillds on one
// etcd behind seckill-router, all on loopback, a sale put on it through
// the router, the primary killed with kill -9 under that load, and what
// happened printed: who led and in which epoch, who took over, the time
// from the kill to the first reservation accepted through the router
// again, every acknowledged reservation looked up through the router,
// the killed replica back as standby, and seckillctl verify of both data
// dirs. It stops everything it started and exits 0 only if every check
// held.
//
//	go run ./replica/hademo --bin bin [--data DIR] [--before N] [--after N]
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/seckill/seckill/internal/etcdtest"
)

const token = "ha-demo-admin-token"

func main() {
	fs := flag.NewFlagSet("hademo", flag.ExitOnError)
	var c config
	fs.StringVar(&c.bin, "bin", "bin", "the folder of seckilld, seckill-router and seckillctl (make build)")
	fs.StringVar(&c.data, "data", "", "where the data dirs and logs go (default: a temporary folder, removed at the end)")
	fs.IntVar(&c.before, "before", 2000, "reservations accepted through the router before the kill")
	fs.IntVar(&c.after, "after", 500, "reservations accepted through the router after the failover before the load stops")
	fs.Parse(os.Args[1:])
	// A Ctrl-C or SIGTERM ends the demo as a failed check does: every
	// process it started stopped, the temporary folder removed.
	interrupt := make(chan os.Signal, 1)
	signal.Notify(interrupt, os.Interrupt, syscall.SIGTERM)
	c.interrupt = interrupt
	if err := run(c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ha-demo:", err)
		if errors.Is(err, errInterrupted) {
			os.Exit(130)
		}
		os.Exit(1)
	}
}

// errInterrupted is run's error when a signal on config.interrupt cut
// the demo short.
var errInterrupted = errors.New("interrupted: stopped everything it started")

type config struct {
	bin, data     string
	before, after int
	interrupt     <-chan os.Signal // a signal here ends the demo (nil: never)
}

// proc is one child process and where its output went.
type proc struct {
	name string
	cmd  *exec.Cmd
	base string // http://host:port, from its "listening on" line
	log  string
	done chan error
	// ended: the process was killed or stopped and waited for.
	ended bool
}

// start runs bin with args, stderr to dir/name.log, and waits for the
// "<banner> listening on http://..." line on its stdout. The process runs
// in a process group of its own, as etcd does (etcdtest.StartIn): a
// Ctrl-C in a terminal signals the demo's group (make, go run, the demo)
// alone, and the demo stops its processes in order (the router, the
// replicas, then etcd), so a replica can still release its leader key.
func start(dir, name, bin, banner string, args ...string) (*proc, error) {
	p := &proc{name: name, cmd: exec.Command(bin, args...), log: filepath.Join(dir, name+".log"), done: make(chan error, 1)}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	p.cmd.Stderr = logf
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.done <- p.cmd.Wait(); logf.Close() }()
	addr := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if rest, ok := strings.CutPrefix(lines.Text(), banner+" listening on "); ok {
				a, _, _ := strings.Cut(rest, " ")
				addr <- a
			}
		}
	}()
	select {
	case p.base = <-addr:
		return p, nil
	case err := <-p.done:
		return nil, fmt.Errorf("%s exited at start (%v); see %s", name, err, p.log)
	case <-time.After(2 * time.Minute):
		p.cmd.Process.Kill()
		return nil, fmt.Errorf("%s did not start within 2 minutes; see %s", name, p.log)
	}
}

// kill ends the process with SIGKILL and waits for it.
func (p *proc) kill() error {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.done
	p.ended = true
	return nil
}

// stop sends SIGTERM and waits (SIGKILL after a minute): the exit's
// error, nil for exit 0 or a process already ended.
func (p *proc) stop() error {
	if p.ended {
		return nil
	}
	p.ended = true
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		return err
	case <-time.After(time.Minute):
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s still ran a minute after SIGTERM", p.name)
	}
}

type health struct {
	Role  string `json:"role"`
	Epoch uint64 `json:"epoch"`
}

func getJSON(url string, v any) (int, error) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil {
		json.Unmarshal(b, v)
	}
	return resp.StatusCode, nil
}

// await polls cond every 20 ms for up to 2 minutes, until a signal on
// interrupt (errInterrupted).
func await(interrupt <-chan os.Signal, what string, cond func() bool) error {
	for deadline := time.Now().Add(2 * time.Minute); !cond(); {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not happen within 2 minutes", what)
		}
		select {
		case <-interrupt:
			return errInterrupted
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

func role(p *proc) health {
	var h health
	getJSON(p.base+"/healthz", &h)
	return h
}

// inSync reports whether primary p has published standby in its sync set.
func inSync(p *proc, standby string) bool {
	var st struct {
		Role string   `json:"role"`
		Sync []string `json:"sync"`
	}
	getJSON(p.base+"/admin/replica", &st)
	return st.Role == "primary" && len(st.Sync) == 1 && st.Sync[0] == standby
}

// ack is a reservation the router answered 202.
type ack struct{ requestID, reservationID string }

// sale reserves through the router from 8 workers with fresh ids until
// stopped; it records every 202 and when it was answered.
type sale struct {
	router   string
	stopped  atomic.Bool
	accepted atomic.Int64
	mu       sync.Mutex
	acks     []ack
	times    []time.Time // when each acknowledged reservation was sent
	answered []time.Time // and when its 202 was read
	wg       sync.WaitGroup
}

func (s *sale) start() {
	for w := range 8 {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for i := 0; !s.stopped.Load(); i++ {
				id := fmt.Sprintf("ha-demo-w%d-%d", w, i)
				body, _ := json.Marshal(map[string]string{"request_id": id, "user_id": "u-" + id})
				sent := time.Now()
				resp, err := http.Post(s.router+"/v1/campaigns/demo/skus/sku-1/reservations", "application/json", bytes.NewReader(body))
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				var r struct {
					ReservationID string `json:"reservation_id"`
				}
				json.NewDecoder(resp.Body).Decode(&r)
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					time.Sleep(10 * time.Millisecond) // the failover, or sold out
					continue
				}
				s.mu.Lock()
				s.acks, s.times = append(s.acks, ack{id, r.ReservationID}), append(s.times, sent)
				s.answered = append(s.answered, time.Now())
				s.mu.Unlock()
				s.accepted.Add(1)
			}
		}()
	}
}

// firstAfter is the first 202 answered after t.
func (s *sale) firstAfter(t time.Time) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first time.Time
	for i, sent := range s.times {
		if at := s.answered[i]; sent.After(t) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first, !first.IsZero()
}

func run(c config, out io.Writer) (err error) {
	bin, err := filepath.Abs(c.bin)
	if err != nil {
		return err
	}
	dir := c.data
	if dir == "" {
		if dir, err = os.MkdirTemp("", "seckill-ha-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	say := func(format string, a ...any) { fmt.Fprintf(out, format+"\n", a...) }

	etcd, err := etcdtest.StartIn(filepath.Join(dir, "etcd"))
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	defer etcd.Terminate()
	var procs []*proc // stopped in reverse order at the end
	defer func() {
		for i := len(procs) - 1; i >= 0; i-- {
			if serr := procs[i].stop(); serr != nil && err == nil {
				err = fmt.Errorf("%s: %w", procs[i].name, serr)
			}
		}
	}()
	startReplica := func(name string) (*proc, error) {
		p, err := start(dir, name, filepath.Join(bin, "seckilld"), "seckilld",
			"--addr", "127.0.0.1:0", "--data-dir", filepath.Join(dir, name), "--admin-token", token, "--log-level", "warn",
			"--replica", name, "--replica-set", "rs1", "--replication-addr", "127.0.0.1:0", "--etcd", etcd.Endpoint, "--lease-ttl", "2s")
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
		return p, nil
	}
	a, err := startReplica("a")
	if err != nil {
		return err
	}
	if err := await(c.interrupt, "a leads", func() bool { return role(a).Role == "primary" }); err != nil {
		return err
	}
	b, err := startReplica("b")
	if err != nil {
		return err
	}
	if err := await(c.interrupt, "b is published in the sync set", func() bool { return inSync(a, "b") }); err != nil {
		return err
	}
	router, err := start(dir, "router", filepath.Join(bin, "seckill-router"), "seckill-router",
		"--addr", "127.0.0.1:0", "--etcd", etcd.Endpoint, "--cells", "rs1="+strings.TrimPrefix(a.base, "http://"))
	if err != nil {
		return err
	}
	procs = append(procs, router)
	first := role(a)
	say("etcd %s; replica set rs1: a (%s) leads epoch %d, b (%s) is its synchronous standby; router %s", etcd.Endpoint, a.base, first.Epoch, b.base, router.base)

	s := &sale{router: router.base}
	s.start()
	defer func() { s.stopped.Store(true); s.wg.Wait() }()
	if err := await(c.interrupt, fmt.Sprintf("%d reservations accepted", c.before), func() bool { return s.accepted.Load() >= int64(c.before) }); err != nil {
		return err
	}
	killed := time.Now()
	if err := a.kill(); err != nil {
		return err
	}
	// A reservation sent once a has ended was answered by b: one sent
	// before may have been answered by a, its answer read after the kill.
	dead := time.Now()
	say("kill -9 of the primary a after %d reservations accepted through the router", s.accepted.Load())
	var took time.Duration
	if err := await(c.interrupt, "a reservation accepted after the kill", func() bool {
		at, ok := s.firstAfter(dead)
		took = at.Sub(killed)
		return ok
	}); err != nil {
		return err
	}
	h := role(b)
	if h.Role != "primary" || h.Epoch <= first.Epoch {
		return fmt.Errorf("b after the failover: %+v", h)
	}
	say("b took over in epoch %d: %s from the kill to the first reservation accepted through the router", h.Epoch, took.Round(time.Millisecond))
	target := s.accepted.Load() + int64(c.after)
	if err := await(c.interrupt, "the sale goes on", func() bool { return s.accepted.Load() >= target }); err != nil {
		return err
	}
	s.stopped.Store(true)
	s.wg.Wait()

	// Every acknowledged reservation, through the router (now to b).
	for _, k := range s.acks {
		var r struct {
			ReservationID string `json:"reservation_id"`
		}
		code, err := getJSON(router.base+"/v1/reservations/"+k.reservationID, &r)
		if err != nil || code != http.StatusOK || r.ReservationID != k.reservationID {
			return fmt.Errorf("acknowledged reservation %s (request %s) not found after the failover: %d %v", k.reservationID, k.requestID, code, err)
		}
	}
	say("all %d acknowledged reservations found through the router after the failover", len(s.acks))

	// a comes back as b's standby.
	if a, err = startReplica("a"); err != nil {
		return err
	}
	if err := await(c.interrupt, "a rejoins and is published in b's sync set", func() bool { return inSync(b, "a") }); err != nil {
		return err
	}
	say("a restarted: it rejoined as b's standby and is back in the sync set")

	// Stop everything, then verify both data dirs.
	for i := len(procs) - 1; i >= 0; i-- {
		if err := procs[i].stop(); err != nil {
			return fmt.Errorf("%s: %w", procs[i].name, err)
		}
	}
	for _, name := range []string{"a", "b"} {
		cmd := exec.Command(filepath.Join(bin, "seckillctl"), "verify", filepath.Join(dir, name))
		if vout, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("seckillctl verify %s: %v\n%s", name, err, vout)
		}
	}
	say("seckillctl verify: both data dirs clean; stopped")
	return nil
}
