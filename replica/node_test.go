package replica

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"
)

const testBound = 2 * time.Second

// cluster is a runner of Nodes over the twin coordinator, for tests: it
// performs each action as seckilld's runner does (coordinator calls
// answered at once) and records what a primary's stream would wait for.
type cluster struct {
	t      fataler
	strict bool
	mu     sync.Mutex
	now    time.Time
	m      *Memory
	nodes  map[string]*Node
	coords map[string]*MemoryReplica
	// waited is what each replica's stream waits for (ActPromote, ActWait);
	// serving is the epoch it acknowledges in (0: it does not).
	waited  map[string][]string
	serving map[string]uint64
	// needsBase: the standbys the last tick reported needing a base copy.
	needsBase map[string]bool
	// lateAnswers: a SetSync the coordinator takes is answered with a
	// timeout (etcd answered after the call's deadline).
	lateAnswers bool
	// log is every action performed, "name kind args".
	log []string
	// promoted is every epoch a replica was promoted in.
	promoted map[uint64]string
}

// fataler is the part of testing.TB and rapid.T the cluster uses.
type fataler interface{ Fatalf(string, ...any) }

func newCluster(t fataler, strict bool, names ...string) *cluster {
	c := &cluster{t: t, strict: strict, now: time.Unix(1_700_000_000, 0), nodes: map[string]*Node{}, coords: map[string]*MemoryReplica{},
		waited: map[string][]string{}, serving: map[string]uint64{}, promoted: map[uint64]string{}}
	c.m = NewMemory(func() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now })
	for _, n := range names {
		c.nodes[n] = NewNode(n, strict, testBound)
		c.coords[n] = c.m.Replica("rs", n, 2*time.Second)
	}
	return c
}

func (c *cluster) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// pass lets d pass with every replica's keep-alives running.
func (c *cluster) pass(d time.Duration) {
	for step := 500 * time.Millisecond; d > 0; d -= step {
		c.advance(min(step, d))
		for _, co := range c.coords {
			co.KeepAlive()
		}
	}
}

func (c *cluster) clock() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

// run performs actions of replica name, and those their answers give.
func (c *cluster) run(name string, actions []Action) {
	ctx := context.Background()
	n, co := c.nodes[name], c.coords[name]
	for len(actions) > 0 {
		a := actions[0]
		actions = actions[1:]
		c.log = append(c.log, fmt.Sprintf("%s %s %v %s", name, a.Kind, a.Standbys, a.Primary))
		var next []Action
		switch a.Kind {
		case ActRead:
			v, err := co.Read(ctx)
			next = n.Viewed(v, err)
		case ActAcquire:
			h, err := co.Acquire(ctx, a.View)
			next = n.Acquired(c.clock(), h, err)
		case ActPromote:
			if prev, ok := c.promoted[a.Holding.Epoch]; ok {
				c.t.Fatalf("epoch %d promoted twice: %s then %s", a.Holding.Epoch, prev, name)
			}
			c.promoted[a.Holding.Epoch] = name
			c.waited[name] = slices.Clone(a.Standbys)
			c.serving[name] = a.Holding.Epoch
		case ActDemote:
			c.serving[name] = 0
			c.waited[name] = nil
		case ActWait:
			c.waited[name] = slices.Clone(a.Standbys)
		case ActSetSync:
			if c.strict && len(n.SyncSet()) > 0 && len(a.Standbys) == 0 && !c.needsBase[n.SyncSet()[0]] {
				c.t.Fatalf("strict: %s empties its sync set %v\n%v", name, n.SyncSet(), c.log)
			}
			_, err := co.SetSync(ctx, a.Holding, a.Standbys)
			if err == nil && c.lateAnswers {
				err = context.DeadlineExceeded
			}
			next = n.Published(err)
		case ActFollow:
		}
		c.check()
		actions = append(next, actions...)
	}
}

// check asserts after every action: the sync set in the coordinator is
// waited for by its primary while that primary serves (rule 1), and no
// two replicas serve in one epoch.
func (c *cluster) check() {
	v, _ := c.coords[firstName(c.nodes)].Read(context.Background())
	if p := v.Sync.Primary; p != "" && c.serving[p] == v.Sync.Epoch {
		for _, s := range v.Sync.Standbys {
			if !slices.Contains(c.waited[p], s) {
				c.t.Fatalf("rule 1: %s publishes %v but waits for %v\n%v", p, v.Sync.Standbys, c.waited[p], c.log)
			}
		}
	}
	epochs := map[uint64]string{}
	for name, e := range c.serving {
		if e == 0 {
			continue
		}
		if other, ok := epochs[e]; ok {
			c.t.Fatalf("%s and %s both serve epoch %d", other, name, e)
		}
		epochs[e] = name
	}
}

func firstName(m map[string]*Node) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names[0]
}

// tick ticks replica name with followers, delivering Lost first if its
// lease ended.
func (c *cluster) tick(name string, followers ...Follower) {
	n := c.nodes[name]
	if n.Role() == Primary {
		select {
		case <-c.coords[name].Lost(n.Holding()):
			c.run(name, n.Lost(n.Holding()))
			return
		default:
		}
	}
	c.needsBase = map[string]bool{}
	for _, f := range followers {
		c.needsBase[f.Name] = f.NeedsBase
	}
	c.run(name, n.Tick(c.clock(), followers))
}

// actionsOf returns the logged actions of name from index from on.
func (c *cluster) actionsOf(name string, from int) []string {
	var out []string
	for _, l := range c.log[from:] {
		if len(l) > len(name) && l[:len(name)+1] == name+" " {
			out = append(out, l[len(name)+1:])
		}
	}
	return out
}

// publications is actionsOf without the reads (a primary reads at every
// tick that publishes nothing).
func (c *cluster) publications(name string, from int) []string {
	return slices.DeleteFunc(c.actionsOf(name, from), func(a string) bool { return a == "read [] " })
}

func expectActions(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("actions\n got %q\nwant %q", got, want)
	}
}

// A set of two from the start: a leads, b follows; b is waited for and
// then published once caught up; it goes silent and is unpublished first,
// then waited for no more.
func TestNodeRuleOneOrder(t *testing.T) {
	c := newCluster(t, false, "a", "b")
	c.tick("a")
	c.tick("b")
	if c.nodes["a"].Role() != Primary || c.nodes["b"].Role() != Standby || c.nodes["b"].Following() != "a" {
		t.Fatalf("roles a %v b %v following %q", c.nodes["a"].Role(), c.nodes["b"].Role(), c.nodes["b"].Following())
	}
	mark := len(c.log)
	c.tick("a", Follower{Name: "b", Connected: true, LastAck: c.clock(), LagRecords: 5})
	expectActions(t, c.publications("a", mark)) // not caught up: nothing
	c.tick("a", Follower{Name: "b", Connected: true, CaughtUp: true, LastAck: c.clock()})
	expectActions(t, c.publications("a", mark), "wait [b] ", "set-sync [b] ")
	if v, _ := c.coords["a"].Read(context.Background()); !slices.Equal(v.Sync.Standbys, []string{"b"}) {
		t.Fatalf("published %+v", v.Sync)
	}

	// Disconnected within the bound: kept.
	mark = len(c.log)
	c.tick("a", Follower{Name: "b", LastAck: c.clock()})
	c.pass(testBound / 2)
	c.tick("a", Follower{Name: "b", LastAck: c.clock().Add(-testBound / 2)})
	expectActions(t, c.publications("a", mark))
	// Past it: unpublished, then no longer waited for.
	c.pass(testBound)
	c.tick("a", Follower{Name: "b"})
	expectActions(t, c.publications("a", mark), "set-sync [] ", "wait [] ")
}

// A sync set the coordinator took, answered too late (the call timed
// out), may be the one it holds: a standby the primary added there and
// took for unpublished is waited for until a set without it is published,
// though it goes silent; only then do commits go on without it.
func TestNodeKeepsWaitingForAStandbyPublishedWithoutAnswer(t *testing.T) {
	c := newCluster(t, false, "a", "b")
	c.tick("a")
	c.tick("b")
	mark := len(c.log)
	c.lateAnswers = true
	c.tick("a", Follower{Name: "b", Connected: true, CaughtUp: true, LastAck: c.clock()})
	c.lateAnswers = false
	expectActions(t, c.publications("a", mark), "wait [b] ", "set-sync [b] ")
	if v, _ := c.coords["a"].Read(context.Background()); !slices.Equal(v.Sync.Standbys, []string{"b"}) {
		t.Fatalf("the coordinator holds %+v", v.Sync)
	}
	// Silent past the bound (check fails at a wait without b while the
	// coordinator names it).
	mark = len(c.log)
	c.tick("a", Follower{Name: "b"})
	c.pass(testBound + time.Millisecond)
	c.tick("a", Follower{Name: "b"})
	c.tick("a", Follower{Name: "b"})
	expectActions(t, c.publications("a", mark), "set-sync [] ", "wait [] ")
}

// Strict: the last published standby is never dropped; commits keep
// waiting for it.
func TestNodeStrictKeepsTheLastStandby(t *testing.T) {
	c := newCluster(t, true, "a", "b")
	c.tick("a")
	c.tick("b")
	c.tick("a", Follower{Name: "b", Connected: true, CaughtUp: true, LastAck: c.clock()})
	mark := len(c.log)
	for range 5 {
		c.pass(testBound)
		c.tick("a", Follower{Name: "b"})
	}
	expectActions(t, c.publications("a", mark))
	if w := c.nodes["a"].Waited(); !slices.Equal(w, []string{"b"}) {
		t.Fatalf("waited %v", w)
	}
}

// A standby that lags with acknowledgements older than the bound is
// dropped like a disconnected one.
func TestNodeDropsAStandbyThatStopsAcknowledging(t *testing.T) {
	c := newCluster(t, false, "a", "b")
	c.tick("a")
	c.tick("b")
	c.tick("a", Follower{Name: "b", Connected: true, CaughtUp: true, LastAck: c.clock()})
	acked := c.clock()
	c.pass(testBound + time.Millisecond)
	mark := len(c.log)
	c.tick("a", Follower{Name: "b", Connected: true, LastAck: acked, LagRecords: 3})
	expectActions(t, c.actionsOf("a", mark), "set-sync [] ", "wait [] ")
}

// A standby of the sync set that needs a base copy is dropped at once,
// unpublished before it is no longer waited for (the stream holds its
// base copy until then), in strict mode too though it is the last one;
// caught up again, it is published again.
func TestNodeDropsAStandbyThatNeedsABaseCopy(t *testing.T) {
	for _, strict := range []bool{false, true} {
		c := newCluster(t, strict, "a", "b")
		c.tick("a")
		c.tick("b")
		c.tick("a", Follower{Name: "b", Connected: true, CaughtUp: true, LastAck: c.clock()})
		mark := len(c.log)
		c.tick("a", Follower{Name: "b", Connected: true, NeedsBase: true, LastAck: c.clock(), LagRecords: 40})
		expectActions(t, c.publications("a", mark), "set-sync [] ", "wait [] ")
		if v, _ := c.coords["a"].Read(context.Background()); len(v.Sync.Standbys) != 0 {
			t.Fatalf("strict %v: the coordinator still names %v", strict, v.Sync.Standbys)
		}
		mark = len(c.log)
		c.tick("a", Follower{Name: "b", Connected: true, CaughtUp: true, LastAck: c.clock()})
		expectActions(t, c.publications("a", mark), "wait [b] ", "set-sync [b] ")
	}
}

// Lost demotes at once; the standby of the sync set takes over in the
// next epoch and the old primary follows it.
func TestNodeDemotesOnLost(t *testing.T) {
	c := newCluster(t, false, "a", "b")
	c.tick("a")
	c.tick("b")
	c.tick("a", Follower{Name: "b", Connected: true, CaughtUp: true, LastAck: c.clock()})
	ha := c.nodes["a"].Holding()
	c.coords["a"].EndLease() // a paused past its lease
	mark := len(c.log)
	c.tick("b")
	if c.nodes["b"].Role() != Primary || c.nodes["b"].Holding().Epoch != ha.Epoch+1 {
		t.Fatalf("b: %v %+v", c.nodes["b"].Role(), c.nodes["b"].Holding())
	}
	expectActions(t, c.actionsOf("b", mark), "read [] ", "acquire [] ", "promote [] ")
	c.tick("a")
	expectActions(t, c.actionsOf("a", mark), "demote [] ", "read [] ", "follow [] b")
	if c.nodes["a"].Role() != Standby || c.serving["a"] != 0 {
		t.Fatalf("a after Lost: %v serving %d", c.nodes["a"].Role(), c.serving["a"])
	}
}

// A SetSync refused with ErrNotLeader demotes as Lost does.
func TestNodeDemotesOnNotLeader(t *testing.T) {
	n := NewNode("a", false, testBound)
	now := time.Unix(1_700_000_000, 0)
	if a := n.Tick(now, nil); len(a) != 1 || a[0].Kind != ActRead {
		t.Fatalf("%v", a)
	}
	if a := n.Viewed(View{}, nil); len(a) != 1 || a[0].Kind != ActAcquire {
		t.Fatalf("%v", a)
	}
	n.Acquired(now, Holding{Name: "a", Revision: 1, Epoch: 1}, nil)
	a := n.Tick(now, []Follower{{Name: "b", Connected: true, CaughtUp: true, LastAck: now}})
	if len(a) != 2 || a[0].Kind != ActWait || a[1].Kind != ActSetSync {
		t.Fatalf("%v", a)
	}
	a = n.Published(ErrNotLeader)
	if len(a) != 2 || a[0].Kind != ActDemote || n.Role() != Candidate {
		t.Fatalf("%v %v", a, n.Role())
	}
}

// A restarted replica finds its own former leader key: it waits for it to
// expire, and then, alone in the sync key, leads again.
func TestNodeWaitsOutItsFormerKey(t *testing.T) {
	c := newCluster(t, false, "a", "b")
	c.tick("a")
	c.nodes["a"] = NewNode("a", false, testBound) // a restarts within the TTL
	mark := len(c.log)
	c.tick("a")
	expectActions(t, c.actionsOf("a", mark), "read [] ")
	c.advance(3 * time.Second)
	c.tick("a")
	if c.nodes["a"].Role() != Primary || c.nodes["a"].Holding().Epoch != 2 {
		t.Fatalf("a: %v %+v", c.nodes["a"].Role(), c.nodes["a"].Holding())
	}
}

// Any interleaving of ticks, statuses, lease ends and time: rule 1 holds
// after every action, no two replicas serve one epoch, each epoch is
// promoted once, in strict mode a published sync set never empties, and
// a replica whose lease ended is demoted at its next step.
func TestNodeProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		strict := rapid.Bool().Draw(rt, "strict")
		names := []string{"a", "b", "c"}
		c := newCluster(rt, strict, names...)
		for range rapid.IntRange(1, 80).Draw(rt, "steps") {
			name := rapid.SampledFrom(names).Draw(rt, "replica")
			n := c.nodes[name]
			switch rapid.IntRange(0, 5).Draw(rt, "event") {
			case 0: // the lease ends (a pause, a cut from etcd)
				c.coords[name].EndLease()
			case 1:
				c.advance(time.Duration(rapid.IntRange(0, 3000).Draw(rt, "ms")) * time.Millisecond)
			case 2: // keep-alives of everyone
				for _, co := range c.coords {
					co.KeepAlive()
				}
			default:
				var followers []Follower
				if n.Role() == Primary {
					for _, other := range names {
						if other == name || c.nodes[other].Following() != name || !rapid.Bool().Draw(rt, "connected") {
							continue
						}
						followers = append(followers, Follower{Name: other, Connected: true,
							CaughtUp: rapid.Bool().Draw(rt, "caughtUp"), LastAck: c.clock()})
					}
				}
				ended, epoch := false, n.Holding().Epoch
				if n.Role() == Primary {
					select {
					case <-c.coords[name].Lost(n.Holding()):
						ended = true
					default:
					}
				}
				c.tick(name, followers...)
				if ended && c.serving[name] == epoch {
					rt.Fatalf("%s lost its lease and still serves\n%v", name, c.log)
				}
			}
		}
	})
}

// A primary that takes the key again (it restarted, perhaps on another
// replication address) is followed anew.
func TestNodeFollowsANewTenureOfTheSamePrimary(t *testing.T) {
	c := newCluster(t, false, "a", "b")
	c.tick("a")
	c.tick("b")
	c.coords["a"].EndLease()
	c.nodes["a"] = NewNode("a", false, testBound) // a restarts, alone in the sync key
	c.tick("a")
	if c.nodes["a"].Role() != Primary {
		t.Fatalf("a: %v", c.nodes["a"].Role())
	}
	mark := len(c.log)
	c.tick("b")
	expectActions(t, c.actionsOf("b", mark), "read [] ", "follow [] a")
	mark = len(c.log)
	c.tick("b")
	expectActions(t, c.actionsOf("b", mark), "read [] ")
}

// A primary whose leader key is gone (deleted by hand, or its lease ended
// in etcd before its client said so) demotes itself at its next read.
func TestNodeDemotesWhenItsKeyIsGone(t *testing.T) {
	n := NewNode("a", false, testBound)
	now := time.Unix(1_700_000_000, 0)
	n.Tick(now, nil)
	n.Viewed(View{}, nil)
	n.Acquired(now, Holding{Name: "a", Revision: 7, Epoch: 1}, nil)
	if a := n.Tick(now, nil); len(a) != 1 || a[0].Kind != ActRead {
		t.Fatalf("a primary's tick: %v", a)
	}
	if a := n.Viewed(View{Leader: "a", LeaderRevision: 7}, nil); len(a) != 0 || n.Role() != Primary {
		t.Fatalf("its own key: %v %v", a, n.Role())
	}
	n.Tick(now, nil)
	if a := n.Viewed(View{}, nil); len(a) != 2 || a[0].Kind != ActDemote || n.Role() != Candidate {
		t.Fatalf("its key gone: %v %v", a, n.Role())
	}
}
