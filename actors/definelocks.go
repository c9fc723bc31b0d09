package actors

import "sync"

// campaignLocks are the locks DefineAll holds, one per campaign of its
// list, for the whole list. Its checks concern one campaign at a time
// (its SKUs' purchase_limit, a SKU's redefinition), so lists of other
// campaigns run beside it: a campaign of thousands of SKUs, defining for
// tens of seconds, does not hold up an operator's PUT of another.
type campaignLocks struct {
	mu   sync.Mutex
	held map[string]*campaignLock // while a list holds or waits for it
}

type campaignLock struct {
	sync.Mutex
	users int // lists that hold or wait for it
}

// lock takes the locks of campaigns, which are sorted and distinct (as
// campaignsOf returns them): two lists take their common campaigns in
// the same order, so neither waits for the other while holding what it
// needs. The returned func releases them.
func (l *campaignLocks) lock(campaigns []string) (unlock func()) {
	locks := make([]*campaignLock, len(campaigns))
	l.mu.Lock()
	if l.held == nil {
		l.held = make(map[string]*campaignLock)
	}
	for i, c := range campaigns {
		if i > 0 && campaigns[i-1] >= c {
			l.mu.Unlock()
			panic("actors: campaignLocks.lock wants sorted, distinct campaigns")
		}
		cl := l.held[c]
		if cl == nil {
			cl = &campaignLock{}
			l.held[c] = cl
		}
		cl.users++
		locks[i] = cl
	}
	l.mu.Unlock()
	for _, cl := range locks {
		cl.Lock()
	}
	return func() {
		for _, cl := range locks {
			cl.Unlock()
		}
		l.mu.Lock()
		for i, cl := range locks {
			if cl.users--; cl.users == 0 {
				delete(l.held, campaigns[i])
			}
		}
		l.mu.Unlock()
	}
}
