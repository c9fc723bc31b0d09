package bench

import (
	"slices"
	"testing"
)

func TestPlanIsDeterministicAndHasItsShares(t *testing.T) {
	spec := PlanSpec{Attempts: 100_000, Users: 100_000, RepeatShare: 0.05, RetryShare: 0.05, Seed: 42}
	first, err := NewPlan(spec)
	if err != nil {
		t.Fatal(err)
	}
	second, _ := NewPlan(spec)
	kinds := map[AttemptKind]int{}
	seenRequests := map[int64]int64{} // request -> user
	for i := int64(0); i < spec.Attempts; i++ {
		a, b := first.At(i), second.At(i)
		if a != b {
			t.Fatalf("attempt %d differs: %+v %+v", i, a, b)
		}
		kinds[a.Kind]++
		switch a.Kind {
		case AttemptRetry:
			user, ok := seenRequests[a.Request]
			if !ok || user != a.User {
				t.Fatalf("retry %+v does not resend an earlier request of the same user", a)
			}
			if !first.Retried(a.Request) {
				t.Fatalf("request %d is resent but not marked retried", a.Request)
			}
		default:
			if _, ok := seenRequests[a.Request]; ok {
				t.Fatalf("attempt %+v reuses a request number", a)
			}
			seenRequests[a.Request] = a.User
		}
	}
	for kind, want := range map[AttemptKind]float64{AttemptFresh: 0.90, AttemptRepeatClick: 0.05, AttemptRetry: 0.05} {
		if got := float64(kinds[kind]) / float64(spec.Attempts); !within(got, want, 0.05) {
			t.Errorf("%s share %.4f, want %.2f", kind, got, want)
		}
	}
	if first.DistinctRequests() != int64(len(seenRequests)) {
		t.Errorf("distinct requests %d, want %d", first.DistinctRequests(), len(seenRequests))
	}
}

func TestPlanSpreadsUsersOverSKUsAndKeepsEachUserOnOne(t *testing.T) {
	plan, err := NewPlan(PlanSpec{Attempts: 20_000, SKUs: 100, RepeatShare: 0.1, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	perSKU := make([]int, 100)
	skuOf := map[int64]int{}
	for i := int64(0); i < plan.Len(); i++ {
		a := plan.At(i)
		perSKU[a.SKU]++
		if sku, ok := skuOf[a.User]; ok && sku != a.SKU {
			t.Fatalf("user %d on SKUs %d and %d", a.User, sku, a.SKU)
		}
		skuOf[a.User] = a.SKU
	}
	for sku, count := range perSKU {
		if count < 100 || count > 320 {
			t.Errorf("SKU %d got %d of 20000 attempts, want about 200", sku, count)
		}
	}
	usersOf := make([]int64, 100)
	for _, sku := range skuOf {
		usersOf[sku]++
	}
	if got := plan.UsersBySKU(); !slices.Equal(got, usersOf) {
		t.Errorf("UsersBySKU %v, counted %v", got, usersOf)
	}
	few, err := NewPlan(PlanSpec{Attempts: 1000, Users: 7, SKUs: 3, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if got := few.UsersBySKU(); got[0]+got[1]+got[2] != 7 {
		t.Errorf("7 users spread as %v", got)
	}
}

func TestUnboundedPlanIsFreshUsersOnly(t *testing.T) {
	plan, err := NewPlan(PlanSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Bounded() {
		t.Fatal("bounded")
	}
	a := plan.At(123_456_789)
	if a.Request != 123_456_789 || a.User != 123_456_789 || a.Kind != AttemptFresh {
		t.Fatalf("attempt %+v", a)
	}
	if _, err := NewPlan(PlanSpec{Attempts: 10, RepeatShare: 0.7, RetryShare: 0.7}); err == nil {
		t.Fatal("shares above 1 accepted")
	}
}
