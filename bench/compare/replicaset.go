package compare

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/internal/etcdtest"
)

// The replica set's names: one set, its primary and its standby.
const (
	replicaSetName  = "rs1"
	replicaPrimary  = "a"
	replicaStandby  = "b"
	standbySampleOf = 1000 // acknowledged reservations looked up on the standby per cell, at most
	// standbyTimeout is the replicas' --standby-timeout: far longer than
	// a cell, so the primary never drops its standby from the sync set
	// during one (a cell sold without waiting for the standby would
	// measure no replication at all); the audit checks it stayed.
	standbyTimeout = "1m"
)

// ReplicaSetTarget is a replica set of two ./bin/seckilld (--fsync always,
// each its own data dir on the same disk) on a private etcd: replica a
// leads, replica b is its synchronous standby, every acknowledgement waits
// for b's fsync. The load goes to the primary's HTTP address directly, not
// through seckill-router. Both replicas and etcd share this machine's
// cores, so the figure is pessimistic against machines of their own.
type ReplicaSetTarget struct {
	options SeckilldOptions
	token   string
	dir     string
	etcd    *etcdtest.Server
	// replicas are the primary (a) and the standby (b), in that order.
	replicas []*replicaProcess
	client   *bench.Client
	// epoch is the primary's at the start: a cell that ends in another
	// was not sold by one tenure.
	epoch uint64

	mu sync.Mutex
	// acknowledged holds, per campaign, the reservation ids the clients
	// were given, for the standby's lookups.
	acknowledged map[string][]string
}

// replicaProcess is one seckilld of the set.
type replicaProcess struct {
	name    string
	base    string
	process *serverProcess
}

// NewReplicaSetTarget returns the target; Start launches etcd and the
// replicas. It uses SeckilldOptions' Binary, WorkDir, MaxConns, Timeout and
// PaymentWindow.
func NewReplicaSetTarget(options SeckilldOptions) *ReplicaSetTarget {
	if options.Binary == "" {
		options.Binary = "./bin/seckilld"
	}
	if options.PaymentWindow <= 0 {
		options.PaymentWindow = 15 * time.Minute
	}
	return &ReplicaSetTarget{options: options, token: "compare-rs-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		acknowledged: map[string][]string{}}
}

// Name returns "seckilld-rs".
func (t *ReplicaSetTarget) Name() string { return "seckilld-rs" }

// Start launches etcd, then replica a and waits until it leads, then
// replica b and waits until a has published it in the sync set: from then
// on every reservation a acknowledges is on b's disk too.
func (t *ReplicaSetTarget) Start(ctx context.Context) error {
	if !isExecutable(t.options.Binary) {
		return unavailable("%s not found: build it with go build -o bin/seckilld ./cmd/seckilld", t.options.Binary)
	}
	if _, err := etcdtest.Build(); err != nil {
		return unavailable("etcd: %v", err)
	}
	dir, err := os.MkdirTemp(t.options.WorkDir, "seckill-compare-rs-")
	if err != nil {
		return err
	}
	t.dir = dir
	if t.etcd, err = etcdtest.StartIn(filepath.Join(dir, "etcd")); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	primary, err := t.startReplica(ctx, replicaPrimary, func(h replicaHealth) bool { return h.Role == "primary" })
	if err != nil {
		return err
	}
	if _, err := t.startReplica(ctx, replicaStandby, func(h replicaHealth) bool {
		return h.Role == "standby" && h.Primary == replicaPrimary
	}); err != nil {
		return err
	}
	if err := primary.process.waitReady(ctx, func(ctx context.Context) error {
		status, err := t.replicaStatus(ctx, primary)
		if err == nil && !slices.Equal(status.Sync, []string{replicaStandby}) {
			err = fmt.Errorf("sync set %v, waiting for [%s]", status.Sync, replicaStandby)
		}
		t.epoch = status.Epoch
		return err
	}); err != nil {
		return err
	}
	t.client, err = bench.NewClient(bench.ClientOptions{
		Target: primary.base, AdminToken: t.token, MaxConns: t.options.MaxConns, Timeout: t.options.Timeout,
	})
	return err
}

// startReplica starts replica name with the flags of the seckilld target
// and the replica set's, and waits until its /healthz satisfies ready.
func (t *ReplicaSetTarget) startReplica(ctx context.Context, name string, ready func(replicaHealth) bool) (*replicaProcess, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	dataDir := filepath.Join(t.dir, name)
	if err := os.Mkdir(dataDir, 0o755); err != nil {
		return nil, err
	}
	process, err := startProcess("seckilld "+name, filepath.Join(t.dir, name+".log"), nil, t.options.Binary,
		"--addr", addr, "--data-dir", dataDir, "--admin-token", t.token, "--fsync", "always",
		"--replica", name, "--replica-set", replicaSetName, "--replication-addr", "127.0.0.1:0",
		"--etcd", t.etcd.Endpoint, "--standby-timeout", standbyTimeout)
	if err != nil {
		return nil, err
	}
	replica := &replicaProcess{name: name, base: "http://" + addr, process: process}
	t.replicas = append(t.replicas, replica)
	return replica, process.waitReady(ctx, func(ctx context.Context) error {
		var h replicaHealth
		if err := getJSON(ctx, replica.base+"/healthz", "", &h); err != nil {
			return err
		}
		if !ready(h) {
			return fmt.Errorf("role %q (primary %q)", h.Role, h.Primary)
		}
		return nil
	})
}

// replicaHealth is a replica's /healthz, as far as the target reads it.
type replicaHealth struct {
	Role    string `json:"role"`
	Epoch   uint64 `json:"epoch"`
	Primary string `json:"primary"`
}

// primaryStatus is a primary's GET /admin/replica, as far as the target
// reads it.
type primaryStatus struct {
	Role     string           `json:"role"`
	Epoch    uint64           `json:"epoch"`
	Sync     []string         `json:"sync"`
	Waited   []string         `json:"waited"`
	Standbys []followerStatus `json:"standbys"`
}

// followerStatus is one standby in its primary's GET /admin/replica.
type followerStatus struct {
	Name      string `json:"name"`
	Connected bool   `json:"connected"`
}

func (t *ReplicaSetTarget) replicaStatus(ctx context.Context, replica *replicaProcess) (primaryStatus, error) {
	var status primaryStatus
	err := getJSON(ctx, replica.base+"/admin/replica", t.token, &status)
	return status, err
}

// getJSON reads url (with the admin token when given) into v; a status
// other than 200 is an error.
func getJSON(ctx context.Context, url, token string, v any) error {
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		request.Header.Set("Authorization", "Bearer "+token)
	}
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		return err
	}
	defer response.Body.Close()
	if response.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", url, response.StatusCode)
	}
	return json.NewDecoder(response.Body).Decode(v)
}

// Prepare defines the campaign on the primary and returns a Reserver that
// also keeps the reservation ids it was given.
func (t *ReplicaSetTarget) Prepare(ctx context.Context, sku SKURef) (bench.Reserver, error) {
	reserver, err := prepareHTTP(ctx, t.client, sku, t.options.PaymentWindow, nil)
	if err != nil {
		return nil, err
	}
	return &keptReserver{BatchReserver: reserver.(bench.BatchReserver), keep: func(ids []string) {
		t.mu.Lock()
		t.acknowledged[sku.CampaignID] = append(t.acknowledged[sku.CampaignID], ids...)
		t.mu.Unlock()
	}}, nil
}

func (t *ReplicaSetTarget) takesBatches() bool { return true }

// keptReserver hands the reservation ids of accepted replies to keep.
type keptReserver struct {
	bench.BatchReserver
	keep func(ids []string)
}

func (r *keptReserver) Reserve(ctx context.Context, requestID, userID string) (bench.Reply, error) {
	reply, err := r.BatchReserver.Reserve(ctx, requestID, userID)
	if err == nil && reply.Outcome == bench.OutcomeAccepted {
		r.keep([]string{reply.ReservationID})
	}
	return reply, err
}

func (r *keptReserver) ReserveBatch(ctx context.Context, items []bench.BatchItem) ([]bench.Reply, error) {
	replies, err := r.BatchReserver.ReserveBatch(ctx, items)
	var ids []string
	for _, reply := range replies {
		if reply.Outcome == bench.OutcomeAccepted {
			ids = append(ids, reply.ReservationID)
		}
	}
	if len(ids) > 0 {
		r.keep(ids)
	}
	return replies, err
}

// Audit reads the primary's audit, checks that the primary still leads
// the epoch it started in with b in its sync set, waited for and
// connected (so every reservation of the cell waited for b), and looks up
// up to standbySampleOf of the cell's acknowledged reservations on the
// standby, spread evenly over the cell and the last one included: each
// must be answered by the standby itself from its committed records.
func (t *ReplicaSetTarget) Audit(ctx context.Context, sku SKURef) (Audit, error) {
	report, err := t.client.Audit(ctx, sku.CampaignID, sku.SKUID)
	if err != nil {
		return Audit{}, err
	}
	audit := auditFromReport(sku, report)
	if !audit.Consistent {
		return audit, nil
	}
	status, err := t.replicaStatus(ctx, t.replicas[0])
	if err != nil {
		return Audit{}, err
	}
	if problem := syncProblem(status, t.epoch); problem != "" {
		audit.Consistent, audit.Detail = false, problem
		return audit, nil
	}
	t.mu.Lock()
	ids := t.acknowledged[sku.CampaignID]
	delete(t.acknowledged, sku.CampaignID)
	t.mu.Unlock()
	if missing, err := t.standbyMissing(ctx, sample(ids, standbySampleOf)); err != nil {
		return Audit{}, err
	} else if missing != "" {
		audit.Consistent, audit.Detail = false, missing
	}
	return audit, nil
}

// syncProblem says what in a primary's status shows that it did not wait
// for the standby throughout ("" when nothing does).
func syncProblem(status primaryStatus, epoch uint64) string {
	want := []string{replicaStandby}
	connected := slices.ContainsFunc(status.Standbys, func(s followerStatus) bool { return s.Name == replicaStandby && s.Connected })
	switch {
	case status.Role != "primary" || status.Epoch != epoch:
		return fmt.Sprintf("replica %s is %s in epoch %d, was primary in epoch %d", replicaPrimary, status.Role, status.Epoch, epoch)
	case !slices.Equal(status.Sync, want) || !slices.Equal(status.Waited, want):
		return fmt.Sprintf("sync set %v, waited for %v: the standby left them", status.Sync, status.Waited)
	case !connected:
		return "the standby is not connected"
	}
	return ""
}

// sample returns at most n of ids, evenly spaced, the last one included.
func sample(ids []string, n int) []string {
	if len(ids) <= n {
		return ids
	}
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, ids[(i+1)*len(ids)/n-1])
	}
	return out
}

// standbyMissing looks each id up on the standby and says which it does
// not serve itself ("" when it serves all). The standby shows a record
// once the primary's commit index for it has reached it, about a round
// trip after the acknowledgement, so a 421 is asked again until the
// deadline.
func (t *ReplicaSetTarget) standbyMissing(ctx context.Context, ids []string) (string, error) {
	standby := t.replicas[1]
	deadline := time.Now().Add(30 * time.Second)
	for i, id := range ids {
		for attempt := 0; ; attempt++ {
			served, err := servedByStandby(ctx, standby.base, id)
			if err != nil {
				return "", err
			}
			if served {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Sprintf("the standby does not serve acknowledged reservation %s (%d of %d looked up found)", id, i, len(ids)), nil
			}
			bench.RealClock{}.SleepUntil(ctx, time.Now().Add(min(time.Millisecond<<attempt, 100*time.Millisecond)))
		}
	}
	return "", nil
}

// servedByStandby reports whether base answers GET /v1/reservations/id
// itself (200 with X-Seckill-Read-From: standby); false for a 421.
func servedByStandby(ctx context.Context, base, id string) (bool, error) {
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/reservations/"+id, nil)
	if err != nil {
		return false, err
	}
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		return false, err
	}
	defer response.Body.Close()
	switch response.StatusCode {
	case http.StatusOK:
		if from := response.Header.Get("X-Seckill-Read-From"); from != "standby" {
			return false, fmt.Errorf("standby lookup of %s: X-Seckill-Read-From %q", id, from)
		}
		return true, nil
	case http.StatusMisdirectedRequest:
		return false, nil
	}
	return false, fmt.Errorf("standby lookup of %s: status %d", id, response.StatusCode)
}

// ServerCPU is both replicas' CPU time (etcd's is left out: it only
// renews leases and answers the replicas' reads of the set's keys).
func (t *ReplicaSetTarget) ServerCPU() (time.Duration, bool) {
	parts, ok := t.ServerCPUParts()
	var sum time.Duration
	for _, part := range parts {
		sum += part
	}
	return sum, ok
}

// ServerCPUParts is each replica's CPU time, the primary's first.
func (t *ReplicaSetTarget) ServerCPUParts() ([]time.Duration, bool) {
	if len(t.replicas) < 2 {
		return nil, false
	}
	parts := make([]time.Duration, 0, len(t.replicas))
	for _, replica := range t.replicas {
		cpu, err := treeCPU(replica.process.pid())
		if err != nil {
			return nil, false
		}
		parts = append(parts, cpu)
	}
	return parts, true
}

// Close stops the standby, then the primary (SIGTERM), then etcd, and
// removes the directory.
func (t *ReplicaSetTarget) Close() error {
	if t.client != nil {
		t.client.CloseIdle()
	}
	var first error
	for i := len(t.replicas) - 1; i >= 0; i-- {
		if err := t.replicas[i].process.stop(syscall.SIGTERM); err != nil && first == nil {
			first = err
		}
	}
	if t.etcd != nil {
		t.etcd.Terminate()
	}
	if t.dir != "" {
		_ = os.RemoveAll(t.dir)
	}
	return first
}
