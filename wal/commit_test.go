package wal

import (
	"path/filepath"
	"testing"
	"time"
)

// On a replicated log a record is committed once durable here and
// confirmed: waiters, reads and DurableAfter wait for both; a confirmation
// beyond the durable records waits for the disk; confirmations only rise.
func TestCommitIndexWaitsForConfirm(t *testing.T) {
	for _, stepped := range []bool{false, true} {
		name := "flusher"
		if stepped {
			name = "stepped"
		}
		t.Run(name, func(t *testing.T) {
			batches := batchObserver(make(chan struct{}, 16))
			l := openLog(t, filepath.Join(t.TempDir(), "wal"), Options{Replicated: true, Stepped: stepped, Observer: batches})
			defer l.Close()
			appendRecords(t, l, 1, 10)
			w := newErrWaiter()
			l.Await(5, w)
			advanced := l.DurableAfter(0)
			if stepped {
				if err := l.Flush(); err != nil {
					t.Fatal(err)
				}
			} else {
				for l.DurableIndex() < 10 { // the observer hears of a batch just before DurableIndex moves
					select {
					case <-batches:
					case <-time.After(time.Millisecond):
					}
				}
			}
			if l.DurableIndex() != 10 || l.CommitIndex() != 0 {
				t.Fatalf("durable %d, commit %d: want 10 and 0 before any confirmation", l.DurableIndex(), l.CommitIndex())
			}
			select {
			case err := <-w:
				t.Fatalf("a waiter released before its record was confirmed (%v)", err)
			case <-advanced:
				t.Fatal("DurableAfter fired before a record was confirmed")
			default:
			}
			if n := readCount(t, l); n != 0 {
				t.Fatalf("ReadDurable passed %d unconfirmed records", n)
			}
			local := 0
			if _, err := l.ReadLocal(1, 100, func(uint64, byte, []byte) error { local++; return nil }); err != nil || local != 10 {
				t.Fatalf("ReadLocal passed %d records (%v), want the 10 durable ones, committed or not", local, err)
			}
			l.Confirm(4)
			if l.CommitIndex() != 4 {
				t.Fatalf("commit %d after Confirm(4)", l.CommitIndex())
			}
			<-advanced
			if n := readCount(t, l); n != 4 {
				t.Fatalf("ReadDurable passed %d records, want the 4 confirmed", n)
			}
			l.Confirm(3) // lower: nothing changes
			if l.CommitIndex() != 4 {
				t.Fatalf("commit %d after a lower confirmation", l.CommitIndex())
			}
			l.Confirm(12) // beyond the log: the disk bounds it
			if err := w.wait(t); err != nil {
				t.Fatal(err)
			}
			if l.CommitIndex() != 10 {
				t.Fatalf("commit %d, want the durable 10", l.CommitIndex())
			}
			appendRecords(t, l, 11, 12)
			if stepped {
				if err := l.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			if err := awaitDurable(t, l, 12); err != nil { // confirmed already: the disk decides
				t.Fatal(err)
			}
		})
	}
}

// A log that is not replicated commits what is durable; Confirm on it is a
// programming error.
func TestCommitIndexOfAPlainLog(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "wal"), Options{})
	defer l.Close()
	appendRecords(t, l, 1, 3)
	if err := awaitDurable(t, l, 3); err != nil {
		t.Fatal(err)
	}
	if l.CommitIndex() != 3 {
		t.Fatalf("commit %d of a plain log with 3 durable records", l.CommitIndex())
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Confirm on a plain log did not panic")
		}
	}()
	l.Confirm(3)
}

// batchObserver signals each batch the flusher made durable.
type batchObserver chan struct{}

func (b batchObserver) Committed(int, time.Duration) { b <- struct{}{} }

func readCount(t *testing.T, l *Log) int {
	t.Helper()
	n := 0
	if _, err := l.ReadDurable(1, 100, func(uint64, byte, []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}
