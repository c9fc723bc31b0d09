package stream

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

// A standby begins the copies of SKUs new to it side by side, as its
// primary defines a list of them at once: each copy's log is held at its
// opening until several open at once, which a standby that makes them one
// after another never reaches (its first holds the rest back). Each
// definition then commits once the standby holds it, and each copy is the
// primary's log.
func TestStandbyBeginsNewCopiesSideBySide(t *testing.T) {
	const skus, atOnce = 8, 4
	var (
		mu            sync.Mutex
		opening, most int
		release       = make(chan struct{})
		once          sync.Once
	)
	held := wal.Options{OpenStore: func(dir string, o wal.StoreOptions) (wal.Store, error) {
		if filepath.Base(filepath.Dir(filepath.Dir(dir))) == "c2" {
			mu.Lock()
			opening++
			most = max(most, opening)
			mu.Unlock()
			<-release
			mu.Lock()
			opening--
			mu.Unlock()
		}
		return wal.OpenTidwallStore(dir, o)
	}}
	p := startPair(t, nodeOptions{standbyWAL: held})
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the standby closes
	p.n.primary.Wait([]string{"b"})

	var defs []sku.Definition
	for i := range skus {
		defs = append(defs, definition("c2", "s"+strconv.Itoa(i)))
	}
	answers := make(chan []error, 1)
	go func() { answers <- p.n.engine.DefineAll(context.Background(), defs, 0) }()
	eventually(t, strconv.Itoa(atOnce)+" copies opening at once", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return most >= atOnce
	})
	once.Do(func() { close(release) })
	for i, err := range <-answers {
		if err != nil {
			t.Fatalf("definition of %s: %v", defs[i].SKUID, err)
		}
	}
	for _, d := range defs {
		sameRecords(t, p.pdir, p.sdir, d.CampaignID, d.SKUID)
	}
}

// A begin that fails on its goroutine (the new copy's log cannot open)
// ends the session with its error, as one on the session goroutine did:
// the standby reports it and connects again.
func TestStandbyBeginFailureEndsTheSession(t *testing.T) {
	refused := errors.New("no room for the log of c2")
	p := startPair(t, nodeOptions{standbyWAL: wal.Options{OpenStore: func(dir string, o wal.StoreOptions) (wal.Store, error) {
		if filepath.Base(filepath.Dir(filepath.Dir(dir))) == "c2" {
			return nil, refused
		}
		return wal.OpenTidwallStore(dir, o)
	}}})
	connects := value(p.sb.metrics.connects)
	define(t, p.n.engine, "c2", "s1")
	eventually(t, "the session ended with the begin's failure, and another began", func() bool {
		st := p.sb.Status()
		return strings.Contains(st.LastError, refused.Error()) && value(p.sb.metrics.connects) > connects
	})
	if l, _ := copyLast(p.sb, "c2", "s1"); l != 0 {
		t.Fatalf("a copy whose log never opened holds records to %d", l)
	}
}
