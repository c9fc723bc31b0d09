package replica

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// Rule 1 under any order of additions, drops, forgets and publications
// that succeed or fail: whatever the coordinator holds (the last set it
// took) is waited for, and in strict mode a non-empty sync set becomes
// empty only to give its last standby a base copy (DropForBase).
func TestStandbysKeepRuleOne(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		strict := rapid.Bool().Draw(t, "strict")
		names := []string{"b", "c", "d"}
		s := NewStandbys(nil, strict)
		var coordinator []string // what SetSync last wrote
		var proposal []string
		forBase := false // proposal drops a standby for its base copy
		for range rapid.IntRange(0, 40).Draw(t, "steps") {
			name := rapid.SampledFrom(names).Draw(t, "standby")
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 4:
				if p, ok := s.DropForBase(name); ok {
					proposal, forBase = p, true
				}
			case 0:
				if p, ok := s.Add(name); ok {
					proposal, forBase = p, false
				}
			case 1:
				if p, ok := s.Drop(name); ok {
					proposal, forBase = p, false
				}
			case 2:
				s.Forget(name)
			case 3:
				if proposal == nil {
					continue
				}
				ok := rapid.Bool().Draw(t, "published")
				if ok {
					if strict && len(coordinator) > 0 && len(proposal) == 0 && !forBase {
						t.Fatalf("strict mode published an empty sync set after %v", coordinator)
					}
					coordinator = proposal
				}
				s.Done(ok)
				proposal = nil
			}
			for _, x := range coordinator {
				if !slices.Contains(s.Waited(), x) {
					t.Fatalf("%s may be promoted (the coordinator holds %v) but is not waited for (%v)", x, coordinator, s.Waited())
				}
			}
			if proposal != nil {
				for _, x := range proposal {
					if !slices.Contains(s.Waited(), x) {
						t.Fatalf("%s is being published (%v) but is not waited for (%v)", x, proposal, s.Waited())
					}
				}
			}
		}
	})
}

// The commit index is the least of the local durable index and every
// waited standby's acknowledgement; in strict mode with none waited,
// nothing commits.
func TestStandbysCommit(t *testing.T) {
	acked := map[string]uint64{"b": 7, "c": 4}
	ack := func(x string) uint64 { return acked[x] }
	s := NewStandbys([]string{"b"}, false)
	if i, ok := s.Commit(9, ack); i != 7 || !ok {
		t.Fatalf("waiting for b: %d %v", i, ok)
	}
	s.Add("c")
	if i, _ := s.Commit(9, ack); i != 4 {
		t.Fatalf("c is waited for as soon as it is added: commit %d, want 4", i)
	}
	s.Done(true)
	s.Drop("c")
	if i, _ := s.Commit(9, ack); i != 4 {
		t.Fatalf("c is waited for until its drop is published: commit %d, want 4", i)
	}
	s.Done(true)
	if i, _ := s.Commit(9, ack); i != 7 {
		t.Fatalf("after c's drop: commit %d, want 7", i)
	}
	strict := NewStandbys([]string{"b"}, true)
	if _, ok := strict.Drop("b"); ok {
		t.Fatal("strict mode dropped its last standby")
	}
	if i, ok := NewStandbys(nil, true).Commit(9, ack); ok {
		t.Fatalf("strict mode with no standby committed %d", i)
	}
	if i, ok := NewStandbys(nil, false).Commit(9, ack); i != 9 || !ok {
		t.Fatalf("alone, not strict: %d %v", i, ok)
	}
}

// A standby that needs a base copy is dropped in strict mode too, the
// last one included: it stays waited for until the coordinator took the
// smaller set, and then, strict with none waited, nothing commits.
func TestStandbysDropForBase(t *testing.T) {
	s := NewStandbys([]string{"b"}, true)
	if _, ok := s.Drop("b"); ok {
		t.Fatal("strict: the last standby dropped")
	}
	publish, ok := s.DropForBase("b")
	if !ok || len(publish) != 0 {
		t.Fatalf("DropForBase = %v, %v; want an empty sync set to publish", publish, ok)
	}
	if !slices.Equal(s.Waited(), []string{"b"}) {
		t.Fatalf("waited %v before the publication, want [b]", s.Waited())
	}
	s.Done(true)
	if len(s.Waited()) != 0 || len(s.Published()) != 0 {
		t.Fatalf("waited %v, published %v after it, want none", s.Waited(), s.Published())
	}
	if _, ok := s.Commit(10, func(string) uint64 { return 10 }); ok {
		t.Fatal("strict with no standby waited for: something commits")
	}
}
