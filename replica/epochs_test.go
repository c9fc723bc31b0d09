package replica

import (
	"testing"

	"pgregory.net/rapid"
)

// Common against the definition, on histories made the way replica sets
// make them: epochs rise; in each, one primary appends records, and
// replicas, in any order, rejoin it (cut back to what they share with it,
// by Common) and copy a prefix of its log, or stay away.
func TestCommonIsTheSharedPrefix(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const replicas = 3
		type log struct {
			h      History
			epochs []uint64 // epochs[i] is record i+1's epoch
		}
		logs := make([]log, replicas)
		for epoch := uint64(1); epoch <= uint64(rapid.IntRange(1, 8).Draw(t, "epochs")); epoch++ {
			p := rapid.IntRange(0, replicas-1).Draw(t, "primary")
			joined := make([]bool, replicas) // rejoined the primary of this epoch
			joined[p] = true
			for range rapid.IntRange(0, 8).Draw(t, "actions") {
				r := rapid.IntRange(0, replicas-1).Draw(t, "replica")
				if r == p { // the primary appends records of its epoch
					for range rapid.IntRange(1, 4).Draw(t, "records") {
						logs[p].h = logs[p].h.Begin(epoch, uint64(len(logs[p].epochs))+1)
						logs[p].epochs = append(logs[p].epochs, epoch)
					}
					continue
				}
				if !joined[r] { // a replica rejoins: it keeps what it shares with the primary
					keep := Common(logs[r].h, uint64(len(logs[r].epochs)), logs[p].h, uint64(len(logs[p].epochs)))
					logs[r].epochs = logs[r].epochs[:keep]
					logs[r].h = logs[r].h.CutAfter(keep)
					joined[r] = true
				}
				// and copies a prefix of the primary's log.
				upto := rapid.IntRange(len(logs[r].epochs), len(logs[p].epochs)).Draw(t, "copied")
				for i := len(logs[r].epochs); i < upto; i++ {
					logs[r].h = logs[r].h.Begin(logs[p].epochs[i], uint64(i)+1)
					logs[r].epochs = append(logs[r].epochs, logs[p].epochs[i])
				}
			}
			for r := range logs {
				if err := logs[r].h.Check(); err != nil {
					t.Fatal(err)
				}
			}
		}
		for a := range logs {
			for b := range logs {
				want := uint64(0)
				for want < uint64(min(len(logs[a].epochs), len(logs[b].epochs))) && logs[a].epochs[want] == logs[b].epochs[want] {
					want++
				}
				got := Common(logs[a].h, uint64(len(logs[a].epochs)), logs[b].h, uint64(len(logs[b].epochs)))
				if got != want {
					t.Fatalf("Common(%d of %v, %d of %v) = %d, want %d", len(logs[a].epochs), logs[a].h, len(logs[b].epochs), logs[b].h, got, want)
				}
			}
		}
	})
}
