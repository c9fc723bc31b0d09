package purchase

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// world is what the SKUs of a campaign really hold, as the registry's
// callers see it: live reservations, reserves sent and not decided yet,
// and reserves whose caller gave up (the SKU may still decide them).
type world struct {
	live    map[[2]string]string // (user, sku) -> reservation id, or on the lottery SKU an entry's request_id
	entry   map[[2]string]bool   // live holds that are lottery entries
	pending []sent               // in their SKU's mailbox, FIFO per SKU
	nextRes int
	nextReq int
}

type sent struct {
	user, sku, req string
	abandoned      bool // the caller called Done(unknown) already
}

// TestRegistryNeverLetsTwoSKUsDecideForOneUser drives a registry with
// random claims, decisions (accepted, refused), lost answers, abandoned
// calls decided later, probes and durable closes over three SKUs and
// three users; SKU "c" is a lottery, where a decided call makes an entry
// that later wins (its reservation) or loses. After every step: no user has reserves pending or live
// reservations on two SKUs, every Held names the true live reservation,
// and a claim is kept while anything of its SKU may still be live.
func TestRegistryNeverLetsTwoSKUsDecideForOneUser(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		skus := []string{"a", "b", "c"}
		users := []string{"u1", "u2", "u3"}
		r := New[int]()
		w := &world{live: map[[2]string]string{}, entry: map[[2]string]bool{}}
		waiterID := 0
		// A woken waiter asks again later (a new claim): its wake-up is
		// not needed here.
		wake := func([]int) {}
		decide := func(i int) {
			s := w.pending[i]
			w.pending = append(w.pending[:i], w.pending[i+1:]...)
			accept := rapid.Bool().Draw(t, "accept")
			k := [2]string{s.user, s.sku}
			if accept && w.live[k] == "" && s.sku == "c" { // an entry, held while it may win
				w.live[k], w.entry[k] = s.req, true
				if ws, conflict := r.Entered(s.user, s.sku, s.req); conflict {
					t.Fatalf("conflict: %s entered on %s", s.user, s.sku)
				} else {
					wake(ws)
				}
			} else if accept && w.live[k] == "" {
				w.nextRes++
				id := fmt.Sprintf("%s~%d", s.sku, w.nextRes)
				w.live[k] = id
				ws, conflict := r.Reserved(s.user, s.sku, id) // durable path first
				if conflict {
					t.Fatalf("conflict: %s reserved on %s", s.user, s.sku)
				}
				wake(ws)
			}
			if !s.abandoned {
				lost := rapid.IntRange(0, 4).Draw(t, "lost") == 0
				wake(r.Done(s.user, s.sku, s.req, lost))
			}
		}
		for step := 0; step < 200; step++ {
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0, 1: // a claim
				u := rapid.SampledFrom(users).Draw(t, "user")
				sk := rapid.SampledFrom(skus).Draw(t, "sku")
				w.nextReq++
				req := fmt.Sprintf("r%d", w.nextReq)
				waiterID++
				d := r.Claim(u, sk, req, waiterID)
				switch d.Verdict {
				case Proceed:
					for _, p := range w.pending {
						if p.user == u && p.sku != sk {
							t.Fatalf("%s granted on %s while a reserve is pending on %s", u, sk, p.sku)
						}
					}
					for k, id := range w.live {
						if k[0] == u && k[1] != sk && id != "" {
							t.Fatalf("%s granted on %s while %s is live", u, sk, id)
						}
					}
					w.pending = append(w.pending, sent{user: u, sku: sk, req: req})
				case Held:
					k := [2]string{u, d.SKU}
					want := d.ReservationID
					if d.EntryRequestID != "" {
						want = d.EntryRequestID
					}
					if w.live[k] != want || w.entry[k] != (d.EntryRequestID != "") || d.SKU == sk {
						t.Fatalf("Held %+v, world %v", d, w.live)
					}
				case Wait:
					r.Forget(u, waiterID) // the waiter gives up at once (or asks again later)
				case Probe:
					// The look-ups go behind the lost calls: decide every
					// pending call of that SKU first (FIFO).
					for i := 0; i < len(w.pending); {
						if w.pending[i].sku == d.SKU {
							decide(i)
							continue
						}
						i++
					}
					wake(r.ProbeDone(u, d.SKU, nil))
				case Busy:
				}
			case 2: // the SKU decides its oldest pending call
				if len(w.pending) > 0 {
					decide(rapid.IntRange(0, len(w.pending)-1).Draw(t, "which"))
				}
			case 3: // a caller gives up: its answer is lost, the call stays
				if len(w.pending) > 0 {
					i := rapid.IntRange(0, len(w.pending)-1).Draw(t, "abandon")
					if s := &w.pending[i]; !s.abandoned {
						s.abandoned = true
						wake(r.Done(s.user, s.sku, s.req, true))
					}
				}
			case 4: // a live reservation closes, durably
				var keys [][2]string
				for k, id := range w.live {
					if id != "" {
						keys = append(keys, k)
					}
				}
				slices.SortFunc(keys, func(a, b [2]string) int { return compare(a[0]+a[1], b[0]+b[1]) })
				if len(keys) > 0 {
					k := rapid.SampledFrom(keys).Draw(t, "close")
					id := w.live[k]
					switch {
					case w.entry[k] && rapid.Bool().Draw(t, "win"): // the entry wins: its reservation holds
						w.nextRes++
						res := fmt.Sprintf("%s~%d", k[1], w.nextRes)
						w.live[k], w.entry[k] = res, false
						if ws, conflict := r.Reserved(k[0], k[1], res); conflict {
							t.Fatalf("conflict: %s won on %s", k[0], k[1])
						} else {
							wake(ws)
						}
					case w.entry[k]: // the entry loses
						w.live[k], w.entry[k] = "", false
						wake(r.EntryEnded(k[0], k[1], id))
					default:
						w.live[k] = ""
						wake(r.Closed(k[0], k[1], id))
					}
				}
			}
			// At most one SKU per user holds or may get a live purchase.
			for _, u := range users {
				on := map[string]bool{}
				for k, id := range w.live {
					if k[0] == u && id != "" {
						on[k[1]] = true
					}
				}
				for _, p := range w.pending {
					if p.user == u {
						on[p.sku] = true
					}
				}
				if len(on) > 1 {
					t.Fatalf("user %s may hold purchases on %v", u, on)
				}
				if len(on) == 1 && r.claims[u] == nil {
					t.Fatalf("user %s has no claim while %v may hold a purchase", u, on)
				}
			}
		}
	})
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
