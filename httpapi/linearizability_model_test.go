package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The specification itself under test: hand-made histories, each either
// linearizable or broken in one way the README forbids. A model that
// accepted everything would pass TestLinearizability; these show it does
// not, and that it tells real-time order from mere sequential consistency.

// Reservation ids of the hand-made histories (opaque to the model).
const (
	resA = "lin~s~1~aaaaaaaaaaaaaaaa"
	resB = "lin~s~2~bbbbbbbbbbbbbbbb"
)

// modelOp is one operation of a hand-made history: client, call and return
// time, what was asked and what was answered.
type modelOp struct {
	client    int
	call, ret int64
	in        linInput
	out       linOutput
}

func reserveIn(requestID, userID string) linInput {
	return linInput{kind: linReserve, requestID: requestID, userID: userID}
}

// passIn is a reserve with the pass minted for passUser (on device, "" for
// none), sent by userID; its request_id stands for the pass's.
func passIn(requestID, passUser, userID, device string) linInput {
	return linInput{kind: linReserve, requestID: requestID, userID: userID, pass: "pass-" + requestID, passUser: passUser, device: device}
}

func payIn(id, paymentID string, amount int64) linInput {
	return linInput{kind: linPay, reservationID: id, paymentID: paymentID, amount: amount, hasAmount: true}
}

// answer encodes body as the JSON answer code, as the recorder decodes it.
func answer(code int, body map[string]any) linOutput {
	raw, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	out := linOutput{code: code, raw: string(raw)}
	if err := json.Unmarshal(raw, &out.body); err != nil {
		panic(err)
	}
	return out
}

func failed(code int, reason string) linOutput {
	return answer(code, map[string]any{"error": reason})
}

// acceptedOut is the 202 of reservation id with token for requestID.
func acceptedOut(id, requestID string, token int) linOutput {
	out := answer(http.StatusAccepted, map[string]any{"reservation_id": id, "request_id": requestID, "state": statePending,
		"token_id": token, "expire_at": "2030-01-01T12:15:00.000Z", "status_url": "/v1/reservations/" + id})
	out.location = "/v1/reservations/" + id
	return out
}

func closedOut(id string) linOutput {
	return answer(http.StatusOK, map[string]any{"reservation_id": id, "state": stateClosed, "closed_reason": reasonCanceled})
}

func paidOut(id, paymentID string) linOutput {
	return answer(http.StatusOK, map[string]any{"reservation_id": id, "state": statePaid, "payment_id": paymentID, "paid_at": "2030-01-01T12:01:00.000Z"})
}

// viewOut is a reservation as GET renders it, PENDING_PAYMENT or CLOSED.
func viewOut(id, requestID, userID string, token int, state string) linOutput {
	body := map[string]any{"reservation_id": id, "request_id": requestID, "user_id": userID, "state": state, "token_id": token,
		"created_at": "2030-01-01T12:00:00.000Z", "expire_at": "2030-01-01T12:15:00.000Z"}
	if state == stateClosed {
		body["closed_at"], body["closed_reason"] = "2030-01-01T12:02:00.000Z", reasonCanceled
	}
	return answer(http.StatusOK, body)
}

func auditOut(saleLimit, available, pending, paid, closed, rejections int) linOutput {
	return answer(http.StatusOK, map[string]any{"sale_limit": saleLimit, "available": available, "reserved": pending, "confirmed": paid,
		"states": map[string]int{statePending: pending, statePaid: paid, stateClosed: closed}, "held_closed": 0,
		"refunds_required": 0, "durable_rejections": rejections, "reservations": pending + paid + closed,
		"invariant_ok": true, "violations": []string{}})
}

// TestLinearizabilityModel checks the specification on hand-made
// histories: each broken one next to a legal twin that differs from it in
// the one answer that breaks it, so that a broken one is refused for its
// fault, not for a slip in how the history was written down.
func TestLinearizabilityModel(t *testing.T) {
	t.Parallel()
	getA := linInput{kind: linGet, reservationID: resA}
	cancelA := linInput{kind: linCancel, reservationID: resA}
	lookupR2 := linInput{kind: linLookup, requestID: "r2"}
	cases := []struct {
		name         string
		saleLimit    int
		ops          []modelOp
		linearizable bool
	}{
		{"two buyers race for the last unit", 1, []modelOp{
			{0, 0, 10, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{1, 1, 9, reserveIn("r2", "u2"), failed(409, "SOLD_OUT")},
		}, true},
		{"the last unit sold twice", 1, []modelOp{
			{0, 0, 10, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{1, 1, 9, reserveIn("r2", "u2"), acceptedOut(resB, "r2", 1)},
		}, false},
		{"two units for two buyers", 2, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{1, 2, 3, reserveIn("r2", "u2"), acceptedOut(resB, "r2", 2)},
		}, true},
		{"one token held twice", 2, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{1, 2, 3, reserveIn("r2", "u2"), acceptedOut(resB, "r2", 1)},
		}, false},
		{"SOLD_OUT with a unit left", 2, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{1, 2, 3, reserveIn("r2", "u2"), failed(409, "SOLD_OUT")},
		}, false},
		{"two live purchases of one user", 2, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{1, 2, 3, reserveIn("r2", "u1"), acceptedOut(resB, "r2", 2)},
		}, false},
		{"the user buys again after cancelling", 1, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{0, 2, 3, cancelA, closedOut(resA)},
			{1, 4, 5, reserveIn("r2", "u1"), acceptedOut(resB, "r2", 1)},
		}, true},
		{"a request_id repeated gets the same 202", 2, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{1, 2, 3, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
		}, true},
		{"a request_id repeated gets another reservation", 2, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{1, 2, 3, reserveIn("r1", "u1"), acceptedOut(resB, "r1", 2)},
		}, false},
		{"a request_id reused by another user: REQUEST_ID_REUSED", 2, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{1, 2, 3, reserveIn("r1", "u2"), failed(422, "REQUEST_ID_REUSED")},
		}, true},
		{"a request_id reused by another user makes a reservation", 2, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{1, 2, 3, reserveIn("r1", "u2"), acceptedOut(resB, "r1", 2)},
		}, false},
		{"a read concurrent with the cancel may see either state", 1, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{0, 2, 6, cancelA, closedOut(resA)},
			{1, 3, 5, getA, viewOut(resA, "r1", "u1", 1, statePending)},
		}, true},
		{"a read after the cancel returned sees the old state", 1, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{0, 2, 3, cancelA, closedOut(resA)},
			{1, 4, 5, getA, viewOut(resA, "r1", "u1", 1, statePending)},
		}, false},
		{"a status after the cancel returned sees the unit back", 1, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{0, 2, 3, cancelA, closedOut(resA)},
			{1, 4, 5, linInput{kind: linStatus}, answer(200, map[string]any{"status": "OPEN"})},
		}, true},
		{"a status after the cancel returned still sold out", 1, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{0, 2, 3, cancelA, closedOut(resA)},
			{1, 4, 5, linInput{kind: linStatus}, answer(200, map[string]any{"status": "TEMP_SOLD_OUT"})},
		}, false},
		{"a payment after close is a refund, listed", 1, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{0, 2, 3, cancelA, closedOut(resA)},
			{0, 4, 5, payIn(resA, "p1", 7), answer(409, map[string]any{"error": "REFUND_REQUIRED", "reservation_id": resA})},
			{1, 6, 7, linInput{kind: linRefunds}, answer(200, map[string]any{"refunds": []map[string]any{{"reservation_id": resA, "payment_id": "p1", "amount": 7}}})},
		}, true},
		{"a payment after close resurrects the order", 1, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{0, 2, 3, cancelA, closedOut(resA)},
			{0, 4, 5, payIn(resA, "p1", 1999), paidOut(resA, "p1")},
		}, false},
		{"a refund not listed", 1, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{0, 2, 3, cancelA, closedOut(resA)},
			{0, 4, 5, payIn(resA, "p1", 7), answer(409, map[string]any{"error": "REFUND_REQUIRED", "reservation_id": resA})},
			{1, 6, 7, linInput{kind: linRefunds}, answer(200, map[string]any{"refunds": []any{}})},
		}, false},
		{"a paid reservation is not closable", 1, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{0, 2, 3, payIn(resA, "p1", 1999), paidOut(resA, "p1")},
			{1, 4, 5, cancelA, answer(409, map[string]any{"error": "NOT_CLOSABLE", "reservation_id": resA})},
		}, true},
		{"a paid reservation cancelled", 1, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{0, 2, 3, payIn(resA, "p1", 1999), paidOut(resA, "p1")},
			{1, 4, 5, cancelA, closedOut(resA)},
		}, false},
		{"a recorded SOLD_OUT is the request_id's answer for good", 1, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{1, 2, 3, reserveIn("r2", "u2"), failed(409, "SOLD_OUT")},
			{1, 4, 5, lookupR2, answer(200, map[string]any{"request_id": "r2", "outcome": "SOLD_OUT"})},
			{0, 6, 7, cancelA, closedOut(resA)},
			{1, 8, 9, reserveIn("r2", "u2"), acceptedOut(resB, "r2", 1)},
		}, false},
		{"a fast-path SOLD_OUT records nothing: the retry may win", 1, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{1, 2, 3, reserveIn("r2", "u2"), failed(409, "SOLD_OUT")},
			{1, 4, 5, lookupR2, failed(404, "NOT_FOUND")},
			{0, 6, 7, cancelA, closedOut(resA)},
			{1, 8, 9, reserveIn("r2", "u2"), acceptedOut(resB, "r2", 1)},
		}, true},
		{"an audit counts", 2, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{1, 2, 3, linInput{kind: linAudit}, auditOut(2, 1, 1, 0, 0, 0)},
		}, true},
		{"an audit miscounts", 2, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{1, 2, 3, linInput{kind: linAudit}, auditOut(2, 2, 0, 0, 0, 0)},
		}, false},
		{"a cap of one per device: the second is SUBJECT_LIMIT", 3, []modelOp{
			{0, 0, 1, passIn("ep.1", "u1", "u1", "d1"), acceptedOut(resA, "ep.1", 1)},
			{1, 2, 3, passIn("ep.2", "u2", "u2", "d1"), failed(409, "SUBJECT_LIMIT")},
			{1, 4, 5, passIn("ep.3", "u3", "u3", "d2"), acceptedOut(resB, "ep.3", 2)},
		}, true},
		{"two unpaid reservations on one device", 3, []modelOp{
			{0, 0, 1, passIn("ep.1", "u1", "u1", "d1"), acceptedOut(resA, "ep.1", 1)},
			{1, 2, 3, passIn("ep.2", "u2", "u2", "d1"), acceptedOut(resB, "ep.2", 2)},
		}, false},
		{"SUBJECT_LIMIT with the device free", 3, []modelOp{
			{0, 0, 1, passIn("ep.1", "u1", "u1", "d1"), acceptedOut(resA, "ep.1", 1)},
			{1, 2, 3, passIn("ep.2", "u2", "u2", "d2"), failed(409, "SUBJECT_LIMIT")},
		}, false},
		{"once paid, the device may reserve again; SUBJECT_LIMIT decided nothing", 3, []modelOp{
			{0, 0, 1, passIn("ep.1", "u1", "u1", "d1"), acceptedOut(resA, "ep.1", 1)},
			{1, 2, 3, passIn("ep.2", "u2", "u2", "d1"), failed(409, "SUBJECT_LIMIT")},
			{0, 4, 5, payIn(resA, "p1", 1999), paidOut(resA, "p1")},
			{1, 6, 7, passIn("ep.2", "u2", "u2", "d1"), acceptedOut(resB, "ep.2", 2)},
		}, true},
		{"another user's pass is refused and decides nothing", 2, []modelOp{
			{1, 0, 1, passIn("ep.1", "u1", "u2", ""), failed(403, "ENTRY_PASS_INVALID")},
			{0, 2, 3, passIn("ep.1", "u1", "u1", ""), acceptedOut(resA, "ep.1", 1)},
		}, true},
		{"another user's pass reserves", 2, []modelOp{
			{1, 0, 1, passIn("ep.1", "u1", "u2", ""), acceptedOut(resA, "ep.1", 1)},
		}, false},
		{"a pass's request_id spent without the pass", 2, []modelOp{
			{1, 0, 1, reserveIn("ep.1", "u1"), acceptedOut(resA, "ep.1", 1)},
		}, false},
		{"QUEUE_FULL decides nothing", 1, []modelOp{
			{1, 0, 1, reserveIn("r2", "u2"), failed(429, "QUEUE_FULL")},
			{0, 2, 3, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{1, 4, 5, lookupR2, failed(404, "NOT_FOUND")},
			{1, 6, 7, linInput{kind: linAudit}, auditOut(1, 0, 1, 0, 0, 0)},
		}, true},
		{"THROTTLED (a slow disk) decides nothing, even for a request_id that made a reservation", 2, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{0, 2, 3, reserveIn("r1", "u1"), failed(429, "THROTTLED")},
			{1, 4, 5, reserveIn("r2", "u2"), failed(429, "THROTTLED")},
			{1, 6, 7, linInput{kind: linAudit}, auditOut(2, 1, 1, 0, 0, 0)},
		}, true},
		{"a THROTTLED reserve counted in the audit", 2, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{0, 2, 3, reserveIn("r1", "u1"), failed(429, "THROTTLED")},
			{1, 4, 5, reserveIn("r2", "u2"), failed(429, "THROTTLED")},
			{1, 6, 7, linInput{kind: linAudit}, auditOut(2, 0, 2, 0, 0, 0)},
		}, false},
		{"an audit asked after a cancel was answered counts it", 2, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{0, 2, 3, cancelA, closedOut(resA)},
			{1, 4, 5, linInput{kind: linAudit}, auditOut(2, 2, 0, 0, 1, 0)},
		}, true},
		{"an audit asked after a cancel was answered shows the state before it", 2, []modelOp{
			{0, 0, 1, reserveIn("r1", "u1"), acceptedOut(resA, "r1", 1)},
			{0, 2, 3, cancelA, closedOut(resA)},
			{1, 4, 5, linInput{kind: linAudit}, auditOut(2, 1, 1, 0, 0, 0)},
		}, false},
	}
	for _, c := range cases {
		history := make([]porcupine.Operation, len(c.ops))
		for i, op := range c.ops {
			history[i] = porcupine.Operation{ClientId: op.client, Call: op.call, Return: op.ret, Input: op.in, Output: op.out}
		}
		want := porcupine.Illegal
		if c.linearizable {
			want = porcupine.Ok
		}
		model := linModel(c.saleLimit, 1) // a cap of 1 per device; reserves without a device are not capped
		if got := porcupine.CheckOperationsTimeout(model, history, 10*time.Second); got != want {
			t.Errorf("%s: %s, want %s\n%s", c.name, got, want, renderHistory(model, history))
		}
	}
}

// stuckAt names where the check of an illegal history got stuck: the
// state after what it could place and the answer it could not.
func TestStuckAtNamesTheAnswerNotAllowed(t *testing.T) {
	history := []porcupine.Operation{
		{ClientId: 0, Call: 0, Return: 1, Input: reserveIn("r1", "u1"), Output: acceptedOut(resA, "r1", 1)},
		{ClientId: 1, Call: 2, Return: 3, Input: linInput{kind: linAudit}, Output: auditOut(2, 2, 0, 0, 0, 0)},
	}
	model := linModel(2, 1)
	result, info := porcupine.CheckOperationsVerbose(model, history, 10*time.Second)
	if result != porcupine.Illegal {
		t.Fatalf("check: %s, want Illegal", result)
	}
	got := stuckAt(model, history, info)
	for _, want := range []string{"stuck after 1 of 2 operations", "r1", "state then: ", "unplaced", "audit"} {
		if !strings.Contains(got, want) {
			t.Fatalf("stuckAt says no %q:\n%s", want, got)
		}
	}
	if i, j := strings.Index(got, "unplaced"), strings.LastIndex(got, "audit"); j < i {
		t.Fatalf("the audit is not among the unplaced:\n%s", got)
	}
}
