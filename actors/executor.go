package actors

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/seckill/seckill/actors/shell"
)

// jobDone brings a job the executor ran back to the SKU's actor.
type jobDone struct{ job *shell.Job }

// executor is the shell.Executor of one incarnation of a SKU's actor: it
// runs each job on a goroutine of its own (a timer with the wall clock's
// time.AfterFunc) and sends it back to the actor as a jobDone message.
type executor struct {
	root *actor.RootContext
	pid  *actor.PID
	// files counts the snapshot jobs running: stop waits for them, so
	// that no snapshot file is being written when the next incarnation
	// recovers.
	files   sync.WaitGroup
	stopped atomic.Bool
}

// Go implements shell.Executor.
func (x *executor) Go(j *shell.Job) {
	files := j.Kind == shell.JobSnapshot
	if files {
		x.files.Add(1)
	}
	go func() {
		if files {
			defer x.files.Done()
		}
		j.Run()
		x.done(j)
	}()
}

// After implements shell.Executor.
func (x *executor) After(d time.Duration, j *shell.Job) {
	if d <= 0 {
		j.Run()
		x.done(j)
		return
	}
	time.AfterFunc(d, func() {
		j.Run()
		x.done(j)
	})
}

func (x *executor) done(j *shell.Job) {
	if !x.stopped.Load() {
		x.root.Send(x.pid, jobDone{job: j})
	}
}

// stop keeps the jobs still running from messaging the actor and waits
// for the snapshot jobs (they never wait on the actor). The shell has
// stopped first: its log is closed, so a snapshot waiting for it was
// handed over with the failure and ends at once.
func (x *executor) stop() {
	x.stopped.Store(true)
	x.files.Wait()
}
