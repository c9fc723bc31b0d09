package replica

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// View is what the coordinator holds for one replica set, read at one
// revision.
type View struct {
	// Leader is the name on the leader key ("" when the key is free).
	Leader string
	// LeaderRevision identifies the leader key's current holding (its
	// creation revision; 0 when free): a later holding has a higher one.
	LeaderRevision int64
	// Sync is the sync key (zero when it was never written).
	Sync SyncState
	// SyncRevision is the sync key's modification revision (0: absent),
	// compared by Acquire.
	SyncRevision int64
}

// SyncState is the sync key's value.
type SyncState struct {
	// Primary published this state (it held the leader key then).
	Primary string `json:"primary"`
	// Standbys is the sync set: the standbys that may be promoted, each
	// holding every record the primary acknowledged.
	Standbys []string `json:"sync"`
	// Epoch is raised by one at every acquisition of the leader key.
	Epoch uint64 `json:"epoch"`
}

// Errors.
var (
	// ErrNotEligible: the leader key is held, or the sync key does not
	// name this replica (MayLead), or the view changed since it was read.
	ErrNotEligible = errors.New("replica: not eligible to lead")
	// ErrNotLeader: the caller's holding of the leader key ended (its lease
	// expired or another replica leads); nothing was written.
	ErrNotLeader = errors.New("replica: not the leader")
	// ErrInvalid: a name or a sync set the coordinator refuses.
	ErrInvalid = errors.New("replica: invalid")
	// ErrNameTaken: another live replica holds this replica's name (its
	// member key is on another lease). Two replicas of one name would take
	// each other's place in the sync set and in the router's table.
	ErrNameTaken = errors.New("replica: the name is taken by another live replica")
)

// MayLead reports whether name may take the leader key in view v: the key
// is free and either no replica ever led (the set starts), or the sync key
// names name as its primary or as a member of its sync set.
func MayLead(v View, name string) bool {
	if v.Leader != "" || v.LeaderRevision != 0 {
		return false
	}
	if v.SyncRevision == 0 || mutantHAPromoteNotSync {
		return true
	}
	return v.Sync.Primary == name || slices.Contains(v.Sync.Standbys, name)
}

// promoted is the sync state written when name takes the leader key in v:
// name is the primary of the next epoch, and its sync set is the old one
// without it (each of those holds every acknowledged record, so each may
// still be promoted; the new primary drops those that do not catch up
// with it, through SetSync, before it acknowledges without them).
func promoted(v View, name string) SyncState {
	standbys := slices.DeleteFunc(slices.Clone(v.Sync.Standbys), func(s string) bool { return s == name })
	return SyncState{Primary: name, Standbys: standbys, Epoch: v.Sync.Epoch + 1}
}

// released is the sync state written when h's primary hands the lead to
// next (a switchover): only they may take the key, not the primary that
// stepped down. With next empty the sync key stays as it is: the primary
// and its sync set may lead again.
func released(h Holding, next []string) SyncState {
	return SyncState{Standbys: slices.Clone(next), Epoch: h.Epoch}
}

// ValidName reports whether s may name a replica or a replica set: 1-64
// characters of [A-Za-z0-9._-], not "." or "..".
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > 64 || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// checkSync validates a sync set published by primary.
func checkSync(primary string, standbys []string) error {
	for i, s := range standbys {
		if !ValidName(s) || s == primary || slices.Contains(standbys[:i], s) {
			return fmt.Errorf("%w: sync set %q of primary %q", ErrInvalid, standbys, primary)
		}
	}
	return nil
}

func (s SyncState) encode() string {
	if s.Standbys == nil {
		s.Standbys = []string{}
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // strings and a number always encode
	}
	return string(b)
}

func decodeSync(b []byte) (SyncState, error) {
	var s SyncState
	if err := json.Unmarshal(b, &s); err != nil {
		return SyncState{}, fmt.Errorf("replica: the sync key holds %q: %w", b, err)
	}
	return s, nil
}
