package compare

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/bench"
)

// turnTarget is a stand-in target that says yes to every reservation and
// records, in a log shared by several targets, the cells it was given.
type turnTarget struct {
	name     string
	startErr error
	mu       *sync.Mutex
	cells    *[]string
	closed   bool
}

func (t *turnTarget) Name() string                    { return t.name }
func (t *turnTarget) Start(ctx context.Context) error { return t.startErr }
func (t *turnTarget) Prepare(ctx context.Context, sku SKURef) (bench.Reserver, error) {
	t.mu.Lock()
	cell := strings.Join(strings.SplitN(sku.CampaignID, "-", 4)[:3], "-") // cmp-<scenario>-c<concurrency>
	*t.cells = append(*t.cells, t.name+" "+cell)
	t.mu.Unlock()
	var n sync.Mutex
	next := 0
	return bench.ReserverFunc(func(ctx context.Context, requestID, userID string) (bench.Reply, error) {
		n.Lock()
		next++
		id := fmt.Sprintf("%s-%d", t.name, next)
		n.Unlock()
		return bench.Reply{Outcome: bench.OutcomeAccepted, ReservationID: id}, nil
	}), nil
}
func (t *turnTarget) Audit(ctx context.Context, sku SKURef) (Audit, error) {
	return Audit{Detail: "stand-in"}, nil
}
func (t *turnTarget) ServerCPU() (time.Duration, bool) { return 0, false }
func (t *turnTarget) Close() error                     { t.closed = true; return nil }

func TestRunMatrixTakesTurnsCellByCell(t *testing.T) {
	var mu sync.Mutex
	var cells []string
	a := &turnTarget{name: "a", mu: &mu, cells: &cells}
	b := &turnTarget{name: "b", mu: &mu, cells: &cells}
	down := &turnTarget{name: "down", mu: &mu, cells: &cells, startErr: fmt.Errorf("%w: not installed", ErrUnavailable)}
	rows := RunMatrix(context.Background(), []Target{a, down, b}, MatrixOptions{
		Concurrencies: []int{16, 64}, Extra: map[string][]int{"b": {128}}, Scenarios: []string{scenarioHot},
		HotDuration: 50 * time.Millisecond, Seed: 1,
	}, io.Discard)
	want := []string{"a cmp-hot-c16", "b cmp-hot-c16", "a cmp-hot-c64", "b cmp-hot-c64", "b cmp-hot-c128"}
	if !slices.Equal(cells, want) {
		t.Errorf("cells ran in the order %q, want %q", cells, want)
	}
	var got []string
	for _, row := range rows {
		got = append(got, fmt.Sprintf("%s/%d/%t", row.Target, row.Concurrency, row.Skipped != ""))
	}
	if wantRows := []string{"a/16/false", "down/16/true", "b/16/false", "a/64/false", "down/64/true", "b/64/false", "b/128/false"}; !slices.Equal(got, wantRows) {
		t.Errorf("rows %q, want %q", got, wantRows)
	}
	if !a.closed || !b.closed {
		t.Errorf("targets left running: a closed %t, b closed %t", a.closed, b.closed)
	}
}
