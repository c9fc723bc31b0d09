package httpapi_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/seckill/seckill/entrypass"
	"github.com/seckill/seckill/httpapi"
)

// The linearizability run: a small SKU, a few users who collide, request_ids
// retried and reused, over the real server on loopback, restarted once.
const (
	linCampaign  = "lin"
	linSKU       = "s"
	linSaleLimit = 4
	// linMaxUnpaid is the SKU's max_unpaid_per_subject: reserves with an
	// entry pass name one of linDevices (or none).
	linMaxUnpaid   = 1
	linUsers       = 6
	linClients     = 8
	linEpochs      = 6
	linOpsPerEpoch = 10 // per client
	// linRestartEpoch is the epoch before which the server is stopped and
	// started again on the same data dir: the history goes on across the
	// restart, against the same specification (one request_id, one result,
	// "also after a restart").
	linRestartEpoch = 4
	// linRequestTimeout is the server's wait for the engine before a 504
	// RESULT_UNKNOWN, far above any answer time here: the specification
	// does not model a result left unknown, so a 504 fails the test as a
	// stall rather than as a linearizability verdict.
	linRequestTimeout = 15 * time.Second
	// linCheckTimeout bounds porcupine's search, which takes milliseconds
	// here (median 3 ms, at most 0.2 s in 1,200 runs; 0.42 s with -race).
	// A search that runs out of time fails the test rather than passing it:
	// an exhausting search is also what a violation looks like (proving a
	// history illegal means trying every order), and a silent pass would
	// hide one. The bound is wall time, so it is far above the search's
	// CPU time: a run beside other work (make bench, a dozen busy
	// processes on two cores) once took over 5 s of wall time.
	linCheckTimeout = 60 * time.Second
	// linSeedEnv replays a run's choices (not its timing): set it to the
	// seed a failure printed.
	linSeedEnv = "SECKILL_LINZ_SEED"
)

// Ids that name no reservation: a seq never issued, and seq 1 with a tag it
// does not have (its real tag would have to be all zeros, a 2^-64 chance).
var linForgedIDs = []string{
	linCampaign + "~" + linSKU + "~999~0123456789abcdef",
	linCampaign + "~" + linSKU + "~1~0000000000000000",
}

// TestLinearizability runs linClients concurrent clients against one SKU,
// each a seeded random mix of reserve (new, retried, reused by another
// user), pay (the price, a wrong amount, none; new and repeated
// payment_ids), cancel and reads (reservation, request lookup, SKU status,
// audit, refunds), in epochs that each end with a sweep reading the SKU
// back; the server restarts once between epochs. Every call and answer is
// recorded with its call and return time, and the whole history must be
// linearizable against the specification in linearizability_spec_test.go.
// Expiry is out of scope: nothing expires within the test's payment window.
func TestLinearizability(t *testing.T) {
	t.Parallel()
	seed := linSeed(t)
	t.Logf("seed %d (replay the choices with %s=%d)", seed, linSeedEnv, seed)
	passes := passConfig(t)
	config := func(c *httpapi.Config) { passes(c); c.RequestTimeout = linRequestTimeout }
	ts := startServer(t, serverOptions{config: config})
	c := campaign(linCampaign, "15m", map[string]int{linSKU: linSaleLimit})
	c["max_unpaid_per_subject"] = linMaxUnpaid
	ts.define(c)

	began := time.Now()
	rec := newLinRecorder(ts.base)
	rec.signer, _ = entrypass.ParseKeyRing(testPassKeys)
	rngs := make([]*rand.Rand, linClients)
	for client := range rngs {
		rngs[client] = rand.New(rand.NewPCG(seed, uint64(client)))
	}
	for epoch := range linEpochs {
		if epoch == linRestartEpoch {
			ts.stop()
			ts = startServer(t, serverOptions{dir: ts.dir, config: config})
			rec.base = ts.base
		}
		parallel(linClients, func(client int) {
			for n := range linOpsPerEpoch {
				if rngs[client].IntN(linBatchOneIn) == 0 {
					rec.doBatch(client, rec.chooseBatch(client, epoch*linOpsPerEpoch+n, rngs[client]))
					continue
				}
				rec.do(client, rec.choose(epoch, client, epoch*linOpsPerEpoch+n, rngs[client]))
			}
		})
		rec.sweep(linClients)
	}
	ran := time.Since(began)
	if len(rec.errs) > 0 {
		t.Fatalf("seed %d: %d requests failed, the first: %v", seed, len(rec.errs), rec.errs[0])
	}
	tally := rec.tally()
	t.Logf("%d operations in %v: %s", len(rec.ops), ran.Round(time.Millisecond), tally)
	// The outcomes every run reaches (the rarer ones, such as
	// ALREADY_PURCHASED, are in the tally): a history without them would
	// pass the check without testing much, e.g. if every reserve were
	// refused QUEUE_FULL, which decides nothing and is always allowed.
	// (SUBJECT_LIMIT needs stock left and a device with an unpaid
	// reservation: a few per run, not every run; the model test has it.)
	for _, want := range []string{"reserve 202", "reserve 409 SOLD_OUT", "pay 200 PAID", "cancel 200 CLOSED", "reserve 403 ENTRY_PASS_INVALID"} {
		if tally[want] == 0 {
			t.Errorf("seed %d: no %q in the history: the mix no longer exercises it", seed, want)
		}
	}
	if rec.batchItems == 0 {
		t.Errorf("seed %d: no batch reserve in the history", seed)
	}

	checkLinearizable(t, linModel(linSaleLimit, linMaxUnpaid), rec.ops, seed)
}

// checkLinearizable fails the test unless history is linearizable under
// model within linCheckTimeout; on failure it writes porcupine's
// visualization and the history as text to the test's artifact directory.
func checkLinearizable(t *testing.T, model porcupine.Model, history []porcupine.Operation, seed uint64) {
	t.Helper()
	began := time.Now()
	result := porcupine.CheckOperationsTimeout(model, history, linCheckTimeout)
	t.Logf("porcupine: %s in %v", result, time.Since(began).Round(time.Millisecond))
	if result == porcupine.Ok {
		return
	}
	dir := t.ArtifactDir()
	_, info := porcupine.CheckOperationsVerbose(model, history, linCheckTimeout)
	html := filepath.Join(dir, "linearizability.html")
	if err := porcupine.VisualizePath(model, info, html); err != nil {
		t.Errorf("writing the visualization: %v", err)
	}
	text := filepath.Join(dir, "history.txt")
	if err := os.WriteFile(text, []byte(renderHistory(model, history)), 0o644); err != nil {
		t.Errorf("writing the history: %v", err)
	}
	verdict := "is not linearizable"
	if result == porcupine.Illegal {
		// The files above go with the test's temp dir unless -artifacts
		// keeps them: the log carries where the check got stuck.
		t.Log(stuckAt(model, history, info))
	}
	if result == porcupine.Unknown {
		verdict = fmt.Sprintf("could not be checked within %v (inconclusive, counted as a failure)", linCheckTimeout)
	}
	t.Fatalf("seed %d: the history of %d operations %s; visualization %s, history %s (kept with go test -artifacts)",
		seed, len(history), verdict, html, text)
}

// stuckAt renders where the check of an illegal history got stuck: the
// last operations of the longest partial linearization porcupine found,
// the specification's state after it, and the operations left unplaced
// (the earliest to return first: one of those is an answer the state
// does not allow).
func stuckAt(model porcupine.Model, history []porcupine.Operation, info porcupine.LinearizationInfo) string {
	var longest []int
	for _, partition := range info.PartialLinearizations() {
		for _, lin := range partition {
			if len(lin) > len(longest) {
				longest = lin
			}
		}
	}
	state, placed := model.Init(), make([]bool, len(history))
	for _, id := range longest {
		_, state = model.Step(state, history[id].Input, history[id].Output)
		placed[id] = true
	}
	var unplaced []porcupine.Operation
	for id, op := range history {
		if !placed[id] {
			unplaced = append(unplaced, op)
		}
	}
	sort.Slice(unplaced, func(i, j int) bool { return unplaced[i].Return < unplaced[j].Return })
	var b strings.Builder
	fmt.Fprintf(&b, "stuck after %d of %d operations; the last placed:\n", len(longest), len(history))
	for _, id := range longest[max(0, len(longest)-8):] {
		b.WriteString(renderHistory(model, history[id:id+1]))
	}
	fmt.Fprintf(&b, "state then: %s\nunplaced (the first to return):\n", model.DescribeState(state))
	b.WriteString(renderHistory(model, unplaced[:min(len(unplaced), 12)]))
	return b.String()
}

// linSeed returns the seed of this run: linSeedEnv's, or a fresh one.
func linSeed(t *testing.T) uint64 {
	s := os.Getenv(linSeedEnv)
	if s == "" {
		return rand.Uint64()
	}
	seed, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", linSeedEnv, s, err)
	}
	return seed
}

// linRequest is a request_id a client sent, with the user who sent it first.
type linRequest struct{ requestID, userID string }

// linRecorder runs the clients against one server and records the history.
// What the clients know (ids they may retry, reuse, pay or cancel) is
// shared: a reservation id becomes known only once an answer naming it has
// returned, so no operation uses an id before it exists.
type linRecorder struct {
	base  string    // the server's URL (changed between epochs only)
	start time.Time // the history's timestamps are monotonic time since start

	mu           sync.Mutex
	ops          []porcupine.Operation
	errs         []error
	reservations []string        // known reservation ids
	requests     []linRequest    // request_ids sent
	accepted     []linRequest    // request_ids answered 202
	payments     []string        // payment_ids sent
	soldOut      map[string]bool // request_ids answered SOLD_OUT since the last sweep
	pending      map[string]bool // reservation ids last seen PENDING_PAYMENT
	batchItems   int             // reserves answered within a batch
	passes       []linInput      // reserves with a pass sent, by the pass's user

	signer *entrypass.KeyRing // mints the passes (the server's keys)
}

// linDevices are the device subjects of the passes.
var linDevices = []string{"", "d0", "d0", "d1"}

// choosePass picks a reserve with an entry pass: a new one (for any user,
// on a device or none), or, now and then, one sent before, by its user (a
// retry) or by another (refused).
func (r *linRecorder) choosePass(rng *rand.Rand) linInput {
	if len(r.passes) > 0 && rng.IntN(4) == 0 {
		in := r.passes[rng.IntN(len(r.passes))]
		if rng.IntN(2) == 0 {
			in.userID = fmt.Sprintf("u%d", rng.IntN(linUsers))
		}
		return in
	}
	user := fmt.Sprintf("u%d", rng.IntN(linUsers))
	device := linDevices[rng.IntN(len(linDevices))]
	c := entrypass.Claims{CampaignID: linCampaign, SKUID: linSKU, UserID: user,
		NotBeforeMs: time.Now().Add(-time.Second).UnixMilli(), ExpiresAtMs: time.Now().Add(time.Hour).UnixMilli()}
	if device != "" {
		c.Subjects.Set(entrypass.SubjectDevice, entrypass.SubjectKey([]byte("dev-" + device + "--")[:8]))
	}
	var nonce entrypass.Nonce
	for i := range nonce {
		nonce[i] = byte(rng.Uint32())
	}
	text, err := entrypass.Encode(r.signer.Signer(), c, nonce)
	if err != nil {
		panic(err)
	}
	in := linInput{kind: linReserve, requestID: entrypass.RequestID(nonce), userID: user, pass: text, passUser: user, device: device}
	r.passes = append(r.passes, in)
	r.requests = append(r.requests, linRequest{requestID: in.requestID, userID: user})
	return in
}

// newLinRecorder is a recorder for the server at base, knowing no ids yet.
func newLinRecorder(base string) *linRecorder {
	return &linRecorder{base: base, start: time.Now(), soldOut: map[string]bool{}, pending: map[string]bool{}}
}

// pickReservation returns a known reservation id, or now and then (and
// while none is known) a forged one. For a payment or a cancel, half the
// time it is one last seen PENDING_PAYMENT, if any: the races that matter
// (pay against cancel, two payments) are on those, and most known ids are
// settled ones.
func (r *linRecorder) pickReservation(rng *rand.Rand, preferPending bool) string {
	if len(r.reservations) == 0 || rng.IntN(10) == 0 {
		return linForgedIDs[rng.IntN(len(linForgedIDs))]
	}
	if pending := slices.Sorted(maps.Keys(r.pending)); preferPending && len(pending) > 0 && rng.IntN(2) == 0 {
		return pending[rng.IntN(len(pending))]
	}
	return r.reservations[rng.IntN(len(r.reservations))]
}

// choose picks a client's next operation in epoch; n numbers the client's
// operations, for fresh ids. Nothing is paid in the first epoch and paying
// is rarer than cancelling after it, so that the units change hands for a
// while before they are all PAID (the end of the interesting part).
func (r *linRecorder) choose(epoch, client, n int, rng *rand.Rand) linInput {
	r.mu.Lock()
	defer r.mu.Unlock()
	user := func() string { return fmt.Sprintf("u%d", rng.IntN(linUsers)) }
	pick := rng.IntN(100)
	switch {
	case pick < 8 && len(r.requests) > 0: // a retry: the same request_id and user
		q := r.requests[rng.IntN(len(r.requests))]
		return linInput{kind: linReserve, requestID: q.requestID, userID: q.userID}
	case pick < 14 && len(r.requests) > 0: // a request_id sent again by any user, often one that won
		q := r.requests[rng.IntN(len(r.requests))]
		if len(r.accepted) > 0 && rng.IntN(2) == 0 {
			q = r.accepted[rng.IntN(len(r.accepted))]
		}
		return linInput{kind: linReserve, requestID: q.requestID, userID: user()}
	case pick < 24 && epoch > 0:
		return r.choosePayment(client, n, rng)
	case pick < 36:
		return linInput{kind: linCancel, reservationID: r.pickReservation(rng, true)}
	case pick < 46:
		return linInput{kind: linGet, reservationID: r.pickReservation(rng, false)}
	case pick < 52 && len(r.requests) > 0:
		return linInput{kind: linLookup, requestID: r.requests[rng.IntN(len(r.requests))].requestID}
	case pick < 57:
		return linInput{kind: linStatus}
	case pick < 60:
		return linInput{kind: linAudit}
	case pick < 62:
		return linInput{kind: linRefunds}
	case pick < 82:
		return r.choosePass(rng)
	}
	q := linRequest{requestID: fmt.Sprintf("r%d-%d", client, n), userID: user()}
	r.requests = append(r.requests, q)
	return linInput{kind: linReserve, requestID: q.requestID, userID: q.userID}
}

// choosePayment picks a payment: a new payment_id or one sent before (the
// same payment again, or another reservation's), with the price, a wrong
// amount (recorded as given) or none.
func (r *linRecorder) choosePayment(client, n int, rng *rand.Rand) linInput {
	in := linInput{kind: linPay, reservationID: r.pickReservation(rng, true)}
	if len(r.payments) > 0 && rng.IntN(100) < 40 {
		in.paymentID = r.payments[rng.IntN(len(r.payments))]
	} else {
		in.paymentID = fmt.Sprintf("p%d-%d", client, n)
		r.payments = append(r.payments, in.paymentID)
	}
	switch a := rng.IntN(4); {
	case a < 2:
		in.amount, in.hasAmount = 1999, true
	case a == 2:
		in.amount, in.hasAmount = rng.Int64N(5000), true
	}
	return in
}

// sweep reads the SKU back while no client runs, one request at a time,
// as client: the status, every known reservation, what became of each
// request_id answered SOLD_OUT since the last sweep, the refunds and the
// audit.
//
// Besides checking the state once more, a sweep pins it down: its answers
// tell what the history alone leaves open (whether a SOLD_OUT was recorded;
// which amount a refund kept when two were concurrent), so the
// linearizations of the operations before it all reach the same state after
// it (but for rare corners, such as which of two users who sent one
// request_id at once a recorded SOLD_OUT belongs to). A dead end of the
// checker's search after a sweep then does not send it back before the
// sweep, which keeps the search of a long history to about the sum of its
// epochs' searches instead of their product.
func (r *linRecorder) sweep(client int) {
	r.do(client, linInput{kind: linStatus})
	for _, id := range slices.Concat(r.reservations, linForgedIDs) {
		r.do(client, linInput{kind: linGet, reservationID: id})
	}
	ids := slices.Sorted(maps.Keys(r.soldOut))
	clear(r.soldOut)
	for _, id := range ids {
		r.do(client, linInput{kind: linLookup, requestID: id})
	}
	r.do(client, linInput{kind: linRefunds})
	r.do(client, linInput{kind: linAudit})
}

// do sends one operation and records it with its call and return times.
func (r *linRecorder) do(client int, in linInput) {
	method, path, body, header := r.request(in)
	call := time.Since(r.start).Nanoseconds()
	resp, err := try(method, r.base+path, body, header)
	ret := time.Since(r.start).Nanoseconds()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err != nil:
		r.errs = append(r.errs, err)
		return
	case resp.status == http.StatusGatewayTimeout:
		r.errs = append(r.errs, fmt.Errorf("%s %s: %v (a stall: the specification has no unknown results)", method, path, resp))
		return
	}
	r.record(client, in, call, ret, resp.status, resp.header.Get("Location"), resp.raw)
}

// record adds one answered operation to the history (the caller holds
// r.mu) and learns the ids it names.
func (r *linRecorder) record(client int, in linInput, call, ret int64, code int, location string, raw []byte) {
	out := linOutput{code: code, location: location, raw: strings.TrimSpace(string(raw))}
	if err := json.Unmarshal(raw, &out.body); err != nil {
		out.body = linAnswer{} // not a JSON object: no answer the specification allows
	}
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	switch q := (linRequest{in.requestID, in.userID}); {
	case in.kind != linReserve:
	case out.body.Error == "SOLD_OUT":
		r.soldOut[in.requestID] = true
	case out.code == http.StatusAccepted && !slices.Contains(r.accepted, q):
		r.accepted = append(r.accepted, q)
	}
	switch id := out.body.ReservationID; {
	case id == "" || out.code == http.StatusNotFound:
	case !slices.Contains(r.reservations, id):
		r.reservations = append(r.reservations, id)
		if out.code == http.StatusAccepted {
			r.pending[id] = true
		}
	case in.kind == linPay || in.kind == linCancel || (in.kind == linGet && out.body.State != statePending):
		delete(r.pending, id) // PAID or CLOSED now, as far as this answer tells
	}
}

// request builds the HTTP request of an operation.
func (r *linRecorder) request(in linInput) (method, path string, body any, header map[string]string) {
	skuPath := "/v1/campaigns/" + linCampaign + "/skus/" + linSKU
	adminHeader := map[string]string{"Authorization": "Bearer " + testToken}
	switch in.kind {
	case linReserve:
		b := map[string]string{"request_id": in.requestID, "user_id": in.userID}
		if in.pass != "" {
			b["entry_pass"] = in.pass
		}
		return http.MethodPost, skuPath + "/reservations", b, nil
	case linPay:
		b := map[string]any{"payment_id": in.paymentID}
		if in.hasAmount {
			b["amount"] = in.amount
		}
		return http.MethodPost, "/v1/reservations/" + in.reservationID + "/payment", b, nil
	case linCancel:
		return http.MethodPost, "/v1/reservations/" + in.reservationID + "/cancel", nil, nil
	case linGet:
		return http.MethodGet, "/v1/reservations/" + in.reservationID, nil, nil
	case linLookup:
		return http.MethodGet, skuPath + "/requests/" + in.requestID, nil, nil
	case linStatus:
		return http.MethodGet, skuPath, nil, nil
	case linAudit:
		return http.MethodGet, "/admin/campaigns/" + linCampaign + "/skus/" + linSKU + "/audit", nil, adminHeader
	case linRefunds:
		return http.MethodGet, "/admin/campaigns/" + linCampaign + "/skus/" + linSKU + "/refunds", nil, adminHeader
	}
	panic(fmt.Sprintf("no request for %v", in.kind))
}

// tally counts the answers by operation, code and reason ("reserve 202",
// "pay 409 REFUND_REQUIRED"); its String lists them.
func (r *linRecorder) tally() linTally {
	counts := linTally{}
	for _, op := range r.ops {
		in, out := op.Input.(linInput), op.Output.(linOutput)
		key := fmt.Sprintf("%s %d", in.kind, out.code)
		if reason := cmp.Or(out.body.Error, out.body.Outcome, out.body.State, out.body.Status); reason != "" &&
			out.code != http.StatusAccepted && in.kind != linGet {
			key += " " + reason
		}
		counts[key]++
	}
	return counts
}

// linTally counts answers by kind.
type linTally map[string]int

// String lists the counts by key.
func (c linTally) String() string {
	keys := slices.Sorted(maps.Keys(c))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, c[k])
	}
	return strings.Join(parts, ", ")
}
