package sim

import (
	"context"
	"errors"

	"github.com/seckill/seckill/ledger"
)

// faultyLedger is the quota ledger as the agent reaches it in cells mode:
// ledger.Memory behind the faults of a link to etcd. A call that fails
// never reaches the ledger (a refused connection, a timeout before the
// request left); a lost answer is a write that committed (or was refused)
// and whose answer never came back; while the ledger is down every call
// fails. The agent sees each as etcd's error: the outcome unknown.
type faultyLedger struct {
	mem *ledger.Memory
	r   *run
	// fail is the next calls that fail, lose the next writes whose answer
	// is lost, downUntil (ms) the end of an outage.
	fail, lose int
	downUntil  int64
}

var (
	errLedgerUnreachable = errors.New("sim: the ledger did not answer (injected)")
	errAnswerLost        = errors.New("sim: the ledger's answer was lost after the commit (injected)")
)

// reach is the link before a call: nil when the call reaches the ledger.
func (f *faultyLedger) reach() error {
	switch {
	case f.r.now < f.downUntil:
		f.r.faults["ledger_call_while_down"]++
		return errLedgerUnreachable
	case f.fail > 0:
		f.fail--
		f.r.faults["ledger_call_failed"]++
		return errLedgerUnreachable
	}
	return nil
}

// answer is the link after a write: err, or the answer lost.
func (f *faultyLedger) answer(err error) error {
	if f.lose == 0 {
		return err
	}
	f.lose--
	if err == nil {
		f.r.faults["ledger_answer_lost_after_commit"]++
	} else {
		f.r.faults["ledger_answer_lost"]++
	}
	return errAnswerLost
}

func (f *faultyLedger) BumpEpoch(ctx context.Context, cell string) (uint64, error) {
	if err := f.reach(); err != nil {
		return 0, err
	}
	e, err := f.mem.BumpEpoch(ctx, cell)
	if err = f.answer(err); err != nil {
		return 0, err
	}
	return e, nil
}

func (f *faultyLedger) Allocate(ctx context.Context, s ledger.SKU, cell string, seq, epoch uint64, units uint32) (ledger.Allocation, error) {
	if err := f.reach(); err != nil {
		return ledger.Allocation{}, err
	}
	a, err := f.mem.Allocate(ctx, s, cell, seq, epoch, units)
	if err = f.answer(err); err != nil {
		return ledger.Allocation{}, err
	}
	return a, nil
}

func (f *faultyLedger) Credit(ctx context.Context, s ledger.SKU, cell string, epoch uint64, ret ledger.Allocation) error {
	if err := f.reach(); err != nil {
		return err
	}
	return f.answer(f.mem.Credit(ctx, s, cell, epoch, ret))
}

func (f *faultyLedger) Allocations(ctx context.Context, s ledger.SKU, cell string) ([]ledger.Allocation, error) {
	if err := f.reach(); err != nil {
		return nil, err
	}
	return f.mem.Allocations(ctx, s, cell)
}

func (f *faultyLedger) Returns(ctx context.Context, s ledger.SKU, cell string) ([]ledger.Allocation, error) {
	if err := f.reach(); err != nil {
		return nil, err
	}
	return f.mem.Returns(ctx, s, cell)
}

func (f *faultyLedger) ReturnRequest(ctx context.Context, s ledger.SKU, cell string) (ledger.ReturnRequest, bool, error) {
	if err := f.reach(); err != nil {
		return ledger.ReturnRequest{}, false, err
	}
	return f.mem.ReturnRequest(ctx, s, cell)
}

func (f *faultyLedger) MarkLog(ctx context.Context, s ledger.SKU, cell string, epoch uint64) error {
	if err := f.reach(); err != nil {
		return err
	}
	return f.answer(f.mem.MarkLog(ctx, s, cell, epoch))
}

func (f *faultyLedger) LogMarked(ctx context.Context, s ledger.SKU, cell string) (bool, error) {
	if err := f.reach(); err != nil {
		return false, err
	}
	return f.mem.LogMarked(ctx, s, cell)
}
