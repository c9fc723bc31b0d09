package compare

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/lockedbuf"
)

// The replica set takes its turn in the matrix like any target: a hot
// cell and a batch cell on its primary, each judged correct (the
// primary's audit agrees with the answers, the standby stayed in the sync
// set and serves the acknowledged reservations itself), with both
// replicas' CPU measured, and it stops cleanly.
func TestReplicaSetTargetInTheMatrix(t *testing.T) {
	target := NewReplicaSetTarget(SeckilldOptions{Binary: buildSeckilld(t), WorkDir: t.TempDir()})
	var log lockedbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	rows, _ := RunMatrix(ctx, []Target{target}, MatrixOptions{
		Concurrencies: []int{8}, Scenarios: []string{scenarioHot}, HotDuration: 300 * time.Millisecond,
		Batch: 16, BatchConcurrencies: []int{4}, Seed: 1,
	}, io.MultiWriter(&log, testWriter{t}))
	if strings.Contains(log.String(), "stop:") {
		t.Errorf("the replica set did not stop cleanly:\n%s", log.String())
	}
	if len(rows) > 0 && rows[0].Skipped != "" {
		if strings.HasPrefix(rows[0].Skipped, "failed to start") || os.Getenv(requireBaselinesVariable) == "1" {
			t.Fatal(rows[0].Skipped)
		}
		t.Skip(rows[0].Skipped)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want a hot cell and a batch cell: %+v", len(rows), rows)
	}
	for _, row := range rows {
		if !row.Correct || row.Accepted == 0 {
			t.Errorf("%s batch %d: %d accepted, %s", row.Scenario, row.Batch, row.Accepted, row.Verdict)
		}
		if len(row.ServerCPUPartsS) != 2 || row.ServerCPUS < 0 {
			t.Errorf("%s batch %d: server CPU %v, parts %v; want both replicas'", row.Scenario, row.Batch, row.ServerCPUS, row.ServerCPUPartsS)
		}
	}
}

// A primary that changed epoch, left its standby out of the sync set or
// lost its connection did not wait for it throughout the cell.
func TestSyncProblem(t *testing.T) {
	healthy := primaryStatus{Role: "primary", Epoch: 1, Sync: []string{"b"}, Waited: []string{"b"},
		Standbys: []followerStatus{{Name: "b", Connected: true}}}
	if problem := syncProblem(healthy, 1); problem != "" {
		t.Fatalf("healthy set: %s", problem)
	}
	for name, change := range map[string]func(*primaryStatus){
		"new epoch":    func(s *primaryStatus) { s.Epoch = 2 },
		"demoted":      func(s *primaryStatus) { s.Role = "standby" },
		"unpublished":  func(s *primaryStatus) { s.Sync = nil },
		"not waited":   func(s *primaryStatus) { s.Waited = nil },
		"disconnected": func(s *primaryStatus) { s.Standbys[0].Connected = false },
	} {
		status := healthy
		status.Standbys = []followerStatus{healthy.Standbys[0]}
		change(&status)
		if syncProblem(status, 1) == "" {
			t.Errorf("%s: no problem found", name)
		}
	}
}

func TestSampleKeepsTheLastAndSpreads(t *testing.T) {
	ids := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
	if got := strings.Join(sample(ids, 4), ","); got != "1,4,6,9" {
		t.Errorf("sample of 4: %s", got)
	}
	if got := sample(ids[:3], 4); len(got) != 3 {
		t.Errorf("sample of 4 from 3: %v", got)
	}
}

func TestServerCPUColumnSplitsAReplicaSet(t *testing.T) {
	if got := formatServerCPU(Row{ServerCPUS: 3.1, ServerCPUPartsS: []float64{2, 1.1}}); got != "3.10 (2.00+1.10)" {
		t.Errorf("replica set: %q", got)
	}
	if got := formatServerCPU(Row{ServerCPUS: 3.1}); got != "3.10" {
		t.Errorf("one process: %q", got)
	}
	if got := formatServerCPU(Row{ServerCPUS: -1}); got != "in-process" {
		t.Errorf("in process: %q", got)
	}
}
