package httpapi_test

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/seckill/seckill/httpapi"
)

// The linearizability of a campaign whose purchase_limit is "campaign":
// reserves of one user on two SKUs, cancels and reads, over
// HTTP with a restart, checked against a sequential specification of the
// campaign written from the README: a user holds at most one live
// purchase over the campaign; a reserve by a user who holds one answers
// ALREADY_PURCHASED with it (reservation_id and sku_id), records nothing,
// and the same request_id may be accepted once the purchase is closed; a
// SKU with no stock left may answer SOLD_OUT to anyone (the fast path
// looks at no purchase), and a request_id answered SOLD_OUT may keep that
// answer (recorded). Payments are left to the one-SKU specification
// (linearizability_spec_test.go): here PAID is only another live state.
//
// The campaign also has a lottery SKU taking entries for the whole test
// (never drawn): users u2 and u3 may enter it, and an entry holds its user
// like a live purchase. An entry by a user who holds a live purchase
// answers ALREADY_PURCHASED with it, records nothing; a reserve by an
// entered user answers ALREADY_ENTERED with the lottery's sku_id; a
// user's second entry, under any request_id, answers its first; a
// request_id of another user's entry answers REQUEST_ID_REUSED.
const (
	linCampaignID    = "lin-campaign"
	linCampaignUsers = 4
	linCampaignLimit = 2 // per SKU
)

var linCampaignSKUs = []string{"a", "b"}

// linLotterySKU is the campaign's lottery SKU.
const linLotterySKU = "lot"

// campInput is one operation of the campaign history.
type campInput struct {
	kind          linKind // linReserve, linEnter, linCancel or linGet
	skuID         string  // reserve
	requestID     string  // reserve, enter
	userID        string  // reserve, enter
	reservationID string  // cancel, get
}

// campReservation is one reservation of the specification.
type campReservation struct {
	id, skuID, requestID, userID string
	closed                       bool
}

// campState is the specification's state: every reservation, in the
// order made, and the request_ids answered SOLD_OUT ("sku/request_id"):
// the SKU may have recorded it, and then answers it SOLD_OUT again
// whatever the stock (or, if the fast path refused it, decide it anew).
type campState struct {
	reservations []campReservation
	soldOut      []string    // sorted
	entries      []campEntry // sorted by user
}

// campEntry is one lottery entry of the specification.
type campEntry struct {
	userID, requestID string
}

// entryOf returns the user's entry.
func (s campState) entryOf(userID string) (campEntry, bool) {
	for _, e := range s.entries {
		if e.userID == userID {
			return e, true
		}
	}
	return campEntry{}, false
}

// enter is the specification of an entry in the lottery.
func (s campState) enter(in campInput, out linOutput) (bool, campState) {
	b := out.body
	if out.code == http.StatusTooManyRequests {
		return true, s
	}
	for _, e := range s.entries { // a request_id that made an entry
		if e.requestID == in.requestID {
			if e.userID != in.userID {
				return out.code == http.StatusUnprocessableEntity && b.Error == "REQUEST_ID_REUSED", s
			}
			return out.code == http.StatusAccepted && b.RequestID == e.requestID, s
		}
	}
	if e, ok := s.entryOf(in.userID); ok { // the user's first entry
		return out.code == http.StatusAccepted && b.RequestID == e.requestID, s
	}
	if held, ok := s.live(in.userID); ok {
		return out.code == http.StatusConflict && b.Error == "ALREADY_PURCHASED" && b.ReservationID == held.id && b.SKUID == held.skuID, s
	}
	if out.code != http.StatusAccepted || b.RequestID != in.requestID {
		return false, s
	}
	next := s
	next.entries = append(slices.Clone(s.entries), campEntry{userID: in.userID, requestID: in.requestID})
	slices.SortFunc(next.entries, func(x, y campEntry) int { return strings.Compare(x.userID, y.userID) })
	return true, next
}

func (s campState) live(userID string) (campReservation, bool) {
	for _, r := range s.reservations {
		if r.userID == userID && !r.closed {
			return r, true
		}
	}
	return campReservation{}, false
}

func (s campState) available(skuID string) int {
	n := linCampaignLimit
	for _, r := range s.reservations {
		if r.skuID == skuID && !r.closed {
			n--
		}
	}
	return n
}

func (s campState) find(id string) int {
	for i, r := range s.reservations {
		if r.id == id {
			return i
		}
	}
	return -1
}

func (s campState) step(in campInput, out linOutput) (bool, campState) {
	b := out.body
	switch in.kind {
	case linReserve:
		if out.code == http.StatusTooManyRequests {
			return true, s // QUEUE_FULL decides nothing
		}
		for _, r := range s.reservations { // a request_id that made a reservation answers it again
			if r.skuID == in.skuID && r.requestID == in.requestID {
				return out.code == http.StatusAccepted && b.ReservationID == r.id, s
			}
		}
		key := in.skuID + "/" + in.requestID
		_, recorded := slices.BinarySearch(s.soldOut, key)
		if out.code == http.StatusConflict && b.Error == "SOLD_OUT" {
			if recorded {
				return true, s
			}
			if s.available(in.skuID) != 0 {
				return false, s
			}
			next := campState{reservations: s.reservations, soldOut: slices.Clone(s.soldOut), entries: s.entries}
			i, _ := slices.BinarySearch(next.soldOut, key)
			next.soldOut = slices.Insert(next.soldOut, i, key)
			return true, next
		}
		if held, ok := s.live(in.userID); ok {
			return out.code == http.StatusConflict && b.Error == "ALREADY_PURCHASED" && b.ReservationID == held.id &&
				b.SKUID == held.skuID, s
		}
		if _, ok := s.entryOf(in.userID); ok {
			return out.code == http.StatusConflict && b.Error == "ALREADY_ENTERED" && b.SKUID == linLotterySKU, s
		}
		if out.code != http.StatusAccepted || s.available(in.skuID) == 0 || b.ReservationID == "" || s.find(b.ReservationID) >= 0 {
			return false, s
		}
		next := campState{reservations: append(slices.Clone(s.reservations),
			campReservation{id: b.ReservationID, skuID: in.skuID, requestID: in.requestID, userID: in.userID}), soldOut: s.soldOut,
			entries: s.entries}
		return true, next
	case linEnter:
		return s.enter(in, out)
	case linCancel:
		i := s.find(in.reservationID)
		if i < 0 {
			return false, s // the clients cancel only ids they were given
		}
		if out.code != http.StatusOK || b.State != stateClosed || b.ReservationID != in.reservationID {
			return false, s
		}
		if s.reservations[i].closed {
			return true, s
		}
		next := campState{reservations: slices.Clone(s.reservations), soldOut: s.soldOut, entries: s.entries}
		next.reservations[i].closed = true
		return true, next
	case linGet:
		i := s.find(in.reservationID)
		if i < 0 {
			return false, s
		}
		r := s.reservations[i]
		want := statePending
		if r.closed {
			want = stateClosed
		}
		return out.code == http.StatusOK && b.State == want && b.UserID == r.userID, s
	}
	return false, s
}

var campHashSeed = maphash.MakeSeed()

func campModel() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return campState{} },
		Step: func(state, input, output any) (bool, any) {
			return state.(campState).step(input.(campInput), output.(linOutput))
		},
		Equal: func(a, b any) bool {
			x, y := a.(campState), b.(campState)
			return slices.Equal(x.reservations, y.reservations) && slices.Equal(x.soldOut, y.soldOut) && slices.Equal(x.entries, y.entries)
		},
		Hash: func(state any) uint64 {
			var h maphash.Hash
			h.SetSeed(campHashSeed)
			for _, r := range state.(campState).reservations {
				fmt.Fprintf(&h, "%s %v;", r.id, r.closed)
			}
			for _, k := range state.(campState).soldOut {
				fmt.Fprintf(&h, "%s;", k)
			}
			for _, e := range state.(campState).entries {
				fmt.Fprintf(&h, "e %s %s;", e.userID, e.requestID)
			}
			return h.Sum64()
		},
		DescribeOperation: func(input, output any) string {
			in, out := input.(campInput), output.(linOutput)
			return fmt.Sprintf("%s %s %s %s%s -> %d %s%s %s", in.kind, in.skuID, in.userID, in.requestID, shortID(in.reservationID),
				out.code, out.body.Error, out.body.State, shortID(out.body.ReservationID))
		},
		DescribeState: func(state any) string {
			var parts []string
			for _, r := range state.(campState).reservations {
				parts = append(parts, fmt.Sprintf("%s:%s:%s closed=%v", r.skuID, r.userID, shortID(r.id), r.closed))
			}
			for _, e := range state.(campState).entries {
				parts = append(parts, fmt.Sprintf("%s:%s:%s entered", linLotterySKU, e.userID, e.requestID))
			}
			return strings.Join(parts, ", ")
		},
	}
}

// campRecorder records the campaign history.
type campRecorder struct {
	base  string
	start time.Time

	mu       sync.Mutex
	ops      []porcupine.Operation
	errs     []error
	ids      []string    // reservation ids answered
	retry    []campInput // reserves that may be sent again (not SOLD_OUT)
	tally    map[string]int
	sequence int
}

func (r *campRecorder) choose(client int, rng *rand.Rand) campInput {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch pick := rng.IntN(100); {
	case pick < 15 && len(r.retry) > 0:
		return r.retry[rng.IntN(len(r.retry))]
	case pick < 35 && len(r.ids) > 0:
		return campInput{kind: linCancel, reservationID: r.ids[rng.IntN(len(r.ids))]}
	case pick < 45 && len(r.ids) > 0:
		return campInput{kind: linGet, reservationID: r.ids[rng.IntN(len(r.ids))]}
	case pick < 53: // u2 and u3 may enter the lottery
		r.sequence++
		return campInput{kind: linEnter, skuID: linLotterySKU, requestID: fmt.Sprintf("e%d-%d", client, r.sequence),
			userID: fmt.Sprintf("u%d", 2+rng.IntN(2))}
	}
	r.sequence++
	return campInput{kind: linReserve, skuID: linCampaignSKUs[rng.IntN(len(linCampaignSKUs))],
		requestID: fmt.Sprintf("c%d-%d", client, r.sequence), userID: fmt.Sprintf("u%d", rng.IntN(linCampaignUsers))}
}

func (r *campRecorder) do(client int, in campInput) {
	var method, path string
	var body any
	switch in.kind {
	case linReserve:
		method, path = http.MethodPost, "/v1/campaigns/"+linCampaignID+"/skus/"+in.skuID+"/reservations"
		body = map[string]string{"request_id": in.requestID, "user_id": in.userID}
	case linEnter:
		method, path = http.MethodPost, "/v1/campaigns/"+linCampaignID+"/skus/"+in.skuID+"/entries"
		body = map[string]string{"request_id": in.requestID, "user_id": in.userID}
	case linCancel:
		method, path = http.MethodPost, "/v1/reservations/"+in.reservationID+"/cancel"
	case linGet:
		method, path = http.MethodGet, "/v1/reservations/"+in.reservationID
	}
	call := time.Since(r.start).Nanoseconds()
	resp, err := try(method, r.base+path, body, nil)
	ret := time.Since(r.start).Nanoseconds()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil || resp.status == http.StatusGatewayTimeout {
		r.errs = append(r.errs, fmt.Errorf("%s %s: %v %v", method, path, resp, err))
		return
	}
	out := linOutput{code: resp.status, raw: strings.TrimSpace(string(resp.raw))}
	_ = json.Unmarshal(resp.raw, &out.body)
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	r.tally[fmt.Sprintf("%s %d %s", in.kind, out.code, out.body.Error)]++
	if id := out.body.ReservationID; id != "" && !slices.Contains(r.ids, id) {
		r.ids = append(r.ids, id)
	}
	if (in.kind == linReserve || in.kind == linEnter) && !slices.Contains(r.retry, in) {
		r.retry = append(r.retry, in)
	}
}

// TestLinearizabilityCampaignScope runs 6 clients of 4 users reserving on
// both SKUs of a campaign-scope campaign (2 units each), cancelling and
// reading, in 4 epochs with a restart before the third (the purchase
// registry is rebuilt from the SKUs' logs), and checks the history.
func TestLinearizabilityCampaignScope(t *testing.T) {
	t.Parallel()
	seed := linSeed(t)
	t.Logf("seed %d (replay the choices with %s=%d)", seed, linSeedEnv, seed)
	config := func(c *httpapi.Config) { c.RequestTimeout = linRequestTimeout }
	ts := startServer(t, serverOptions{config: config})
	c := campaign(linCampaignID, "15m", map[string]int{"a": linCampaignLimit, "b": linCampaignLimit})
	c["purchase_limit"] = "campaign"
	lot, _ := lotteryCampaign(time.Now(), 2, 0) // entries open for the whole test, never drawn
	c["skus"] = append(c["skus"].([]map[string]any), lot["skus"].([]map[string]any)[0])
	c["skus"].([]map[string]any)[len(c["skus"].([]map[string]any))-1]["sku_id"] = linLotterySKU
	ts.define(c)
	rec := &campRecorder{base: ts.base, start: time.Now(), tally: map[string]int{}}
	rngs := make([]*rand.Rand, 6)
	for client := range rngs {
		rngs[client] = rand.New(rand.NewPCG(seed, uint64(client)))
	}
	for epoch := range 4 {
		if epoch == 2 {
			ts.stop()
			ts = startServer(t, serverOptions{dir: ts.dir, config: config})
			rec.base = ts.base
		}
		parallel(len(rngs), func(client int) {
			for range 12 {
				rec.do(client, rec.choose(client, rngs[client]))
			}
		})
	}
	if len(rec.errs) > 0 {
		t.Fatalf("seed %d: %d requests failed, the first: %v", seed, len(rec.errs), rec.errs[0])
	}
	keys := make([]string, 0, len(rec.tally))
	for k := range rec.tally {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t.Logf("%d operations: %v", len(rec.ops), keys)
	for _, want := range []string{"reserve 202 ", "reserve 409 ALREADY_PURCHASED", "cancel 200 ", "enter 202 ", "reserve 409 ALREADY_ENTERED"} {
		if rec.tally[want] == 0 {
			t.Errorf("seed %d: no %q in the history", seed, want)
		}
	}
	checkLinearizable(t, campModel(), rec.ops, seed)
}
