package bench

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// MaxPlanAttempts bounds a precomputed plan (about 9 bytes per attempt).
const MaxPlanAttempts = 50_000_000

// AttemptKind says why an attempt exists.
type AttemptKind uint8

const (
	// AttemptFresh is a new request from the next user.
	AttemptFresh AttemptKind = iota
	// AttemptRepeatClick is an earlier user clicking again: a new request_id.
	AttemptRepeatClick
	// AttemptRetry is an earlier request sent again: same request_id, same user.
	AttemptRetry
)

// String names the kind.
func (k AttemptKind) String() string {
	switch k {
	case AttemptFresh:
		return "fresh"
	case AttemptRepeatClick:
		return "repeat_click"
	case AttemptRetry:
		return "retry"
	}
	return "invalid"
}

// Attempt is one entry of a plan: which request, from which user, to which SKU.
type Attempt struct {
	// Index is the attempt's position in the plan, from 0.
	Index int64
	// Request numbers the request_id; retries share their original's number.
	Request int64
	// User numbers the user.
	User int64
	// SKU indexes the SKU (0 when there is one).
	SKU int
	// Kind says whether it is fresh, a repeat click or a retry.
	Kind AttemptKind
}

// PlanSpec describes a plan.
type PlanSpec struct {
	// Attempts is the number of attempts; 0 makes an unbounded plan of fresh
	// attempts only (the hot scenario, bounded by time instead).
	Attempts int64
	// Users is the number of distinct users of fresh attempts; 0 means one new
	// user per fresh attempt. Fresh attempts cycle through users when there are
	// fewer users than attempts.
	Users int64
	// SKUs is the number of SKUs (at least 1); a user always targets the same SKU.
	SKUs int
	// RepeatShare is the share of attempts that repeat an earlier user's click
	// with a new request_id, in [0, 1].
	RepeatShare float64
	// RetryShare is the share of attempts that resend an earlier request_id, in [0, 1].
	RetryShare float64
	// Seed makes the plan reproducible.
	Seed int64
}

// Plan is a deterministic list of attempts. A bounded plan is precomputed so
// that workers read it without locks; an unbounded one is computed on demand.
type Plan struct {
	spec     PlanSpec
	requests []int32
	users    []int32
	kinds    []AttemptKind
	retried  []uint64 // bit per request number: some later attempt resends it
	count    int64    // distinct request numbers
	people   int64    // distinct users, numbered 0..people-1
}

// NewPlan validates spec and builds the plan.
func NewPlan(spec PlanSpec) (*Plan, error) {
	if spec.SKUs < 1 {
		spec.SKUs = 1
	}
	if spec.Attempts < 0 || spec.Attempts > MaxPlanAttempts {
		return nil, fmt.Errorf("plan: attempts %d outside [0, %d]", spec.Attempts, MaxPlanAttempts)
	}
	if spec.Users < 0 || spec.Users > MaxPlanAttempts {
		return nil, fmt.Errorf("plan: users %d outside [0, %d]", spec.Users, MaxPlanAttempts)
	}
	if spec.RepeatShare < 0 || spec.RetryShare < 0 || spec.RepeatShare+spec.RetryShare > 1 {
		return nil, errors.New("plan: repeat and retry shares must be >= 0 and add up to at most 1")
	}
	plan := &Plan{spec: spec}
	if spec.Attempts == 0 {
		return plan, nil
	}
	plan.build()
	return plan, nil
}

// build precomputes a bounded plan.
func (p *Plan) build() {
	n := p.spec.Attempts
	p.requests = make([]int32, n)
	p.users = make([]int32, n)
	p.kinds = make([]AttemptKind, n)
	p.retried = make([]uint64, n/64+1)
	rng := rand.New(rand.NewPCG(uint64(p.spec.Seed), 0x5eed_5eed))
	var nextRequest, nextUser int32
	for i := int64(0); i < n; i++ {
		draw := rng.Float64()
		switch {
		case i > 0 && draw < p.spec.RetryShare:
			earlier := rng.Int64N(i)
			p.requests[i] = p.requests[earlier]
			p.users[i] = p.users[earlier]
			p.kinds[i] = AttemptRetry
			request := p.requests[earlier]
			p.retried[request/64] |= 1 << (request % 64)
		case i > 0 && draw < p.spec.RetryShare+p.spec.RepeatShare:
			earlier := rng.Int64N(i)
			p.requests[i] = nextRequest
			nextRequest++
			p.users[i] = p.users[earlier]
			p.kinds[i] = AttemptRepeatClick
		default:
			p.requests[i] = nextRequest
			nextRequest++
			user := nextUser
			if p.spec.Users > 0 {
				user = int32(int64(nextUser) % p.spec.Users)
			}
			nextUser++
			p.users[i] = user
			p.kinds[i] = AttemptFresh
		}
	}
	p.count = int64(nextRequest)
	p.people = int64(nextUser)
	if p.spec.Users > 0 {
		p.people = min(p.people, p.spec.Users)
	}
}

// Bounded reports whether the plan has a fixed number of attempts.
func (p *Plan) Bounded() bool { return p.spec.Attempts > 0 }

// Len returns the number of attempts of a bounded plan (0 when unbounded).
func (p *Plan) Len() int64 { return p.spec.Attempts }

// SKUs returns the number of SKUs.
func (p *Plan) SKUs() int { return p.spec.SKUs }

// At returns attempt i. For a bounded plan, i must be below Len.
func (p *Plan) At(i int64) Attempt {
	if !p.Bounded() {
		user := i
		if p.spec.Users > 0 {
			user = i % p.spec.Users
		}
		return Attempt{Index: i, Request: i, User: user, SKU: p.SKUOf(user), Kind: AttemptFresh}
	}
	user := int64(p.users[i])
	return Attempt{Index: i, Request: int64(p.requests[i]), User: user, SKU: p.SKUOf(user), Kind: p.kinds[i]}
}

// Retried reports whether a later attempt of a bounded plan resends request.
func (p *Plan) Retried(request int64) bool {
	if !p.Bounded() || request < 0 || request/64 >= int64(len(p.retried)) {
		return false
	}
	return p.retried[request/64]&(1<<(request%64)) != 0
}

// DistinctRequests returns the number of distinct request_ids of a bounded plan.
func (p *Plan) DistinctRequests() int64 { return p.count }

// UsersBySKU returns, for a bounded plan, how many distinct users target
// each SKU: the most units a SKU can sell, one per user. Nil when unbounded.
func (p *Plan) UsersBySKU() []int64 {
	if !p.Bounded() {
		return nil
	}
	out := make([]int64, p.spec.SKUs)
	for user := range p.people {
		out[p.SKUOf(user)]++
	}
	return out
}

// SKUOf returns the SKU a user targets: a fixed mix of the user number, so
// that users spread evenly and one user never competes on two SKUs.
func (p *Plan) SKUOf(user int64) int {
	if p.spec.SKUs <= 1 {
		return 0
	}
	x := uint64(user) + uint64(p.spec.Seed)*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return int(x % uint64(p.spec.SKUs))
}
