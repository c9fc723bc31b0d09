package stream

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/internal/benchsize"
	"github.com/seckill/seckill/replica"
	"github.com/seckill/seckill/wal"
)

// BenchmarkStandbyCPU measures what a standby costs per record copied:
// the CPU seconds (user + system, getrusage) of this process while a
// standby copies a hot SKU's log (real reservation records, fsync on),
// acknowledges it and applies it up to the commit index, less those of
// the fake primary that feeds it (one goroutine on a thread of its own,
// RUSAGE_THREAD). The fake primary stands for an engine serving
// closed-loop clients, each waiting for its record's acknowledgement
// before it sends the next: at most two batches unacknowledged (one
// being written on the primary while the next forms), each batch every
// client that is ready; each acknowledged index goes back as the commit
// index with the next batch, in the same write, as the primary sends it
// under load (noteCommitLocked), or in a message of its own
// (commit-alone). The figure still holds the Go runtime's work on the
// feeder's behalf (the netpoller), the same before and after a change
// to the standby. It also reports the standby's fsyncs per record (its
// group commit, which the clients bound).
func BenchmarkStandbyCPU(b *testing.B) {
	count := benchsize.Pick(20_000, 300)
	frames := reserveFrames(b, count)
	for _, c := range []struct {
		clients     int
		commitAlone bool
	}{{16, false}, {16, true}, {64, false}} {
		name := "clients=" + strconv.Itoa(c.clients)
		if c.commitAlone {
			name += ",commit-alone"
		}
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				standbyCPU(b, frames, c.clients, c.commitAlone)
			}
		})
	}
}

// reserveFrames returns the frames of a hot SKU's log after count
// reservations (fsync off: only the records matter).
func reserveFrames(b *testing.B, count int) [][]byte {
	dir := b.TempDir()
	cfg := actors.Config{DataDir: dir, Logger: quiet, ExpiryInterval: time.Hour}
	cfg.Fsync = wal.FsyncNeverBenchmarkOnly
	e, err := actors.Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	define(b, e, "bench", "hot")
	for i := 0; i < count; i++ {
		id := strconv.Itoa(i)
		if _, err := e.Reserve(context.Background(), "bench", "hot", "r"+id, "u"+id); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	r, err := wal.OpenReader(filepath.Join(dir, "bench", "hot", "wal"))
	if err != nil {
		b.Fatal(err)
	}
	var frames [][]byte
	if err := r.Replay(0, func(index uint64, typ byte, payload []byte) error {
		f, err := wal.AppendFrame(nil, typ, index, payload)
		frames = append(frames, f)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	return frames
}

// standbyCPU copies frames to a new standby for clients closed-loop
// clients and reports its CPU per record.
func standbyCPU(b *testing.B, frames [][]byte, clients int, commitAlone bool) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	key := skuKey{"bench", "hot"}
	last := uint64(len(frames))

	sb := startStandby(b, b.TempDir(), "b", ln.Addr().String())
	defer sb.Close()
	nc, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	if _, _, err := readMessage(nc, nil); err != nil { // the hello
		b.Fatal(err)
	}
	begin := encodeBegin(1, begin{key: key, mode: beginResume, history: replica.History{{Epoch: 1, First: 1}}})
	if _, err := nc.Write(begin); err != nil {
		b.Fatal(err)
	}

	type result struct {
		feeder time.Duration
		err    error
	}
	done := make(chan result, 1)
	before := processCPU(b)
	start := time.Now()
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		t0 := threadCPU()
		err := feedStandby(nc, key, frames, clients, commitAlone)
		done <- result{threadCPU() - t0, err}
	}()
	res := <-done
	if res.err != nil {
		b.Fatal(res.err)
	}
	eventually(b, "the standby applied every record", func() bool { return sb.Applied("bench", "hot") == last })
	took := time.Since(start)
	process := processCPU(b) - before

	sb.mu.Lock()
	st := sb.skus[key].log.Stats()
	sb.mu.Unlock()
	perRecord := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(last) }
	b.ReportMetric(perRecord(process-res.feeder), "standby_µs/record")
	b.ReportMetric(perRecord(process), "process_µs/record")
	b.ReportMetric(perRecord(res.feeder), "feeder_µs/record")
	b.ReportMetric(float64(st.Syncs)/float64(last), "fsyncs/record")
	b.ReportMetric(float64(last)/took.Seconds(), "records/s")
}

// feedStandby sends frames to the standby for clients closed-loop
// clients (BenchmarkStandbyCPU) until the last is acknowledged.
func feedStandby(nc net.Conn, key skuKey, frames [][]byte, clients int, commitAlone bool) error {
	const window = 2
	var (
		acked, next uint64   // next: the last index sent
		inFlight    []uint64 // the last index of each batch not acknowledged
		ready       = clients
		buf, out    []byte
		last        = uint64(len(frames))
	)
	for acked < last {
		if ready > 0 && len(inFlight) < window && next < last {
			r := newRecords(1, key, next+1, 0)
			for _, f := range frames[next:min(next+uint64(ready), last)] {
				r.add(f)
			}
			next += uint64(r.count)
			ready -= r.count
			inFlight = append(inFlight, next)
			out = append(out, r.done()...)
		}
		if len(out) > 0 {
			if _, err := nc.Write(out); err != nil {
				return err
			}
			out = out[:0]
		}
		var m message
		var err error
		m, buf, err = readMessage(nc, buf)
		if err != nil {
			return err
		}
		if m.typ != msgAck {
			return fmt.Errorf("message %d from the standby", m.typ)
		}
		list, err := decodeAcks(&m.body)
		if err != nil {
			return err
		}
		for _, a := range list {
			acked = max(acked, a.index)
		}
		for len(inFlight) > 0 && inFlight[0] <= acked {
			inFlight = inFlight[1:]
		}
		ready = clients - int(next-acked)
		commit := encodeCommits(1, []ack{{key: key, index: acked}})
		if commitAlone || next == last {
			if _, err := nc.Write(commit); err != nil {
				return err
			}
		} else {
			out = append(out, commit...)
		}
	}
	return nil
}

func processCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return rusageTime(&ru)
}

// threadCPU is the calling thread's CPU time (0 if getrusage fails: the
// feeder's share is then counted as the standby's).
func threadCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return rusageTime(&ru)
}

func rusageTime(ru *unix.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
