package purchase

// Claims is a campaign's registry as an Attempt's executor offers it: the
// Registry's calls for one waiter of its own, under whatever lock the
// executor needs, with the wake-ups the Registry returns handed out by the
// executor (Direct drops them, for executors that never block on a Wait).
type Claims interface {
	Claim(userID, skuID, requestID string) Decision
	Done(userID, skuID, requestID string, unknown bool)
	ProbeDone(userID, skuID string, stillUnknown []string)
	Forget(userID string)
}

// Direct is Claims over a Registry used from one goroutine, with one
// waiter W; the Registry's wake-ups are dropped: its executor never blocks
// on a Wait (the simulator asks again at a later step).
type Direct[W comparable] struct {
	Registry *Registry[W]
	Waiter   W
}

func (d Direct[W]) Claim(userID, skuID, requestID string) Decision {
	return d.Registry.Claim(userID, skuID, requestID, d.Waiter)
}

func (d Direct[W]) Done(userID, skuID, requestID string, unknown bool) {
	d.Registry.Done(userID, skuID, requestID, unknown)
}

func (d Direct[W]) ProbeDone(userID, skuID string, stillUnknown []string) {
	d.Registry.ProbeDone(userID, skuID, stillUnknown)
}

func (d Direct[W]) Forget(userID string) { d.Registry.Forget(userID, d.Waiter) }

// Step is what an Attempt asks its executor to do next.
type Step uint8

// Steps.
const (
	// Run: send the call (reserve or entry) to the Attempt's SKU, then
	// report its answer with Ran (unknown: the answer was lost).
	Run Step = iota + 1
	// AnswerHeld: answer with Answer(decision, ...) after looking up the
	// request_id on the Attempt's own SKU (its own result comes first).
	AnswerHeld
	// Block: the claim waits for a decision on another SKU: wait for the
	// executor's waiter, then Next; an executor that stops waiting calls
	// Abandon.
	Block
	// Lookup: look up decision.RequestIDs on decision.SKU through its
	// mailbox (behind the lost calls), then report with Probed.
	Lookup
	// Refuse: too many reserves of this user wait or are in flight; nothing
	// was decided (HTTP 429).
	Refuse
	// Unknown: lost answers could not be looked up; nothing was decided
	// (HTTP 503).
	Unknown
)

func (s Step) String() string {
	names := [...]string{"", "RUN", "ANSWER_HELD", "BLOCK", "LOOKUP", "REFUSE", "UNKNOWN"}
	if int(s) < len(names) && s != 0 {
		return names[s]
	}
	return "STEP_INVALID"
}

// Attempt is the claim protocol for one reserve, or lottery entry, of a
// user on a SKU of a campaign-scope campaign, as a stepper: Next, Probed
// and Ran say what to do as data, and the executor (the engine, the
// simulator) does it and reports back. It is the one place the
// protocol's order is written:
//   - Proceed: run the call on the SKU, then end the claim with the
//     answer, definite or lost (Ran);
//   - Held: answer without deciding (the SKU's own result for the
//     request_id first);
//   - Wait: block until the decision on the other SKU, then claim again;
//   - Probe: look up the lost answers, report which stayed unknown, and
//     claim again, or answer Unknown if any did;
//   - Busy: refuse.
//
// An Attempt is used from one goroutine; it does no I/O.
type Attempt struct {
	claims             Claims
	user, sku, request string
	state              attemptState
	decision           Decision
}

type attemptState uint8

const (
	attemptClaiming attemptState = iota // Next may be called
	attemptRunning                      // Ran is due
	attemptProbing                      // Probed is due
	attemptBlocked                      // Next or Abandon is due
	attemptOver                         // an answer was given
)

// NewAttempt starts the protocol for userID's request requestID on skuID.
func NewAttempt(c Claims, userID, skuID, requestID string) Attempt {
	return Attempt{claims: c, user: userID, sku: skuID, request: requestID}
}

// Next claims the user and says what to do, with the claim's Decision.
func (a *Attempt) Next() (Step, Decision) {
	if a.state != attemptClaiming && a.state != attemptBlocked {
		panic("purchase: Attempt.Next while " + a.state.String())
	}
	d := a.claims.Claim(a.user, a.sku, a.request)
	a.decision = d
	switch d.Verdict {
	case Proceed:
		a.state = attemptRunning
		return Run, d
	case Held:
		a.state = attemptOver
		return AnswerHeld, d
	case Wait:
		a.state = attemptBlocked
		return Block, d
	case Probe:
		a.state = attemptProbing
		return Lookup, d
	case Busy:
		a.state = attemptOver
		return Refuse, d
	}
	panic("purchase: Claim answered " + d.Verdict.String())
}

// Ran ends a Run with the call's answer: unknown when it was lost (a
// timeout, a log failure after the decision), so the claim keeps the
// request_id until a Probe settles it.
func (a *Attempt) Ran(unknown bool) {
	if a.state != attemptRunning {
		panic("purchase: Attempt.Ran while " + a.state.String())
	}
	a.state = attemptOver
	a.claims.Done(a.user, a.sku, a.request, unknown)
}

// Probed ends a Lookup with the request_ids whose look-up was not
// answered, and says what to do next: Unknown if any stayed unknown (the
// claim keeps them), else the next claim's step.
func (a *Attempt) Probed(stillUnknown []string) (Step, Decision) {
	if a.state != attemptProbing {
		panic("purchase: Attempt.Probed while " + a.state.String())
	}
	if mutantProbeSkip {
		stillUnknown = nil
	}
	a.claims.ProbeDone(a.user, a.decision.SKU, stillUnknown)
	if len(stillUnknown) > 0 {
		a.state = attemptOver
		return Unknown, a.decision
	}
	a.state = attemptClaiming
	return a.Next()
}

// Abandon gives up a Block: the waiter is forgotten, nothing was decided.
func (a *Attempt) Abandon() {
	if a.state != attemptBlocked {
		panic("purchase: Attempt.Abandon while " + a.state.String())
	}
	a.state = attemptOver
	a.claims.Forget(a.user)
}

func (s attemptState) String() string {
	switch s {
	case attemptClaiming:
		return "claiming"
	case attemptRunning:
		return "running"
	case attemptProbing:
		return "probing"
	case attemptBlocked:
		return "blocked"
	}
	return "over"
}
