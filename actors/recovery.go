package actors

import (
	"errors"
	"fmt"

	"github.com/seckill/seckill/recovery"
	"github.com/seckill/seckill/snapshot"
)

// restoreState rebuilds a.m from the SKU's snapshots and log with the one
// recovery rule (recovery.Plan): the newest usable snapshot plus the
// records after it. Snapshots passed over are reported. A log that does
// not reach back to record 1 with no usable snapshot, or a log shorter
// than a whole snapshot, fails the recovery with an error that says why,
// and the SKU answers UNAVAILABLE rather than start from a partial history.
func (a *skuActor) restoreState() error {
	dir := a.snapshotDir()
	log := a.cfg.Logger.With("campaign", a.h.campaignID, "sku", a.h.skuID)
	a.snap = snapshots{}
	if removed, err := snapshot.RemoveTemp(dir); err != nil {
		return err
	} else if len(removed) > 0 {
		log.Warn("removed unfinished snapshot files", "files", removed)
	}
	res, err := recovery.Plan(a.log, snapshot.Dir(dir), recovery.Options{CampaignID: a.h.campaignID, SKUID: a.h.skuID})
	if res != nil {
		for _, s := range res.Snapshots {
			if s.Verdict != recovery.Usable && s.Verdict != recovery.Base {
				log.Warn("snapshot not used", "path", s.Path, "index", s.Index, "status", s.Status)
			}
		}
	}
	if errors.Is(err, recovery.ErrNoBase) {
		return fmt.Errorf("%w: restore a snapshot into %s (seckillctl restore) instead of starting empty", err, dir)
	}
	if err != nil {
		return err
	}
	a.m, a.snap.index = res.Machine, res.Base.Index
	if res.Base.Path != "" {
		a.h.activity.snapshotLoaded(res.Base.Path, res.Base.Index)
		log.Info("snapshot loaded", "path", res.Base.Path, "index", res.Base.Index,
			"replay_from", res.Base.Index+1, "log_last", res.LogLast, "replayed", res.Replayed)
	}
	return nil
}
