package sim

import (
	"math/rand/v2"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/shell"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

// The engine's settings, drawn from the seed: small thresholds, so that a
// short history snapshots, truncates and recovers often.
func (r *run) coreConfig() core.Config {
	return core.Config{
		Rand:            randReader{&r.rng},
		SnapshotEvery:   uint64(8 + r.seed%32),
		LogFailureRetry: 2 * time.Second,
		DrawBatch:       r.drawBatch(),
		Verify:          true,
	}
}

// drawBatch is the records a round of a draw records: a few in most
// lottery seeds, so that a draw takes several rounds (its timer).
func (r *run) drawBatch() int { return []int{sku.DrawBatch, 1, 2, 3}[r.seed/5%4] }

// drawPause is the pause between two rounds of a draw.
func (r *run) drawPause() time.Duration {
	return []time.Duration{0, 0, 400 * time.Millisecond, 2 * time.Second}[r.seed/20%4]
}

// logBatchRecords bounds the records of one batch of the log (0: the
// default): in some seeds one or two, so that a round's append commits
// the batch before it (a full batch; the flusher of a running log commits
// one while the next fills) and a log flushes in parts, one input
// committing a batch and failing the next, queued one.
func (r *run) logBatchRecords() int { return []int{0, 0, 1, 2}[r.seed/13%4] }

// feedRetain is the feed retention: records kept, and the age of the
// records kept, holding truncation back.
func (r *run) feedRetain() (records uint64, age time.Duration) {
	return []uint64{0, 0, 5, 20}[r.seed/7%4], []time.Duration{0, 0, 3 * time.Second, 20 * time.Second}[r.seed/11%4]
}

// shellConfig is the SKU's shell as the run hosts it: the real shell over
// the simulated disk, executor, host and truncation slots.
func (r *run) shellConfig() shell.Config {
	records, age := r.feedRetain()
	return shell.Config{
		CampaignID: campaignID,
		SKUID:      r.skuID,
		Core:       r.coreConfig(),
		OpenLog: func() (*wal.Log, error) {
			store := openLogStore(r.walDir, segmentSize, &r.storeFaults, &r.storeClock)
			return wal.OpenOver("sim/wal", store, wal.Options{Stepped: true, SegmentSize: segmentSize, Logger: quiet,
				MaxBatchRecords: r.logBatchRecords()})
		},
		Snapshots:         r.snaps,
		Executor:          &r.exec,
		Host:              host{r},
		SnapshotKeep:      snapshotKeep,
		FeedRetainRecords: records,
		FeedRetainAge:     age,
		DrawPause:         r.drawPause(),
		Truncations:       &r.slots,
		Logger:            quiet,
	}
}

// randReader reads the PRNG *g points at when it is read (a run's: the
// step's): the reservation id key.
type randReader struct{ g **rand.Rand }

func (r randReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte((*r.g).Uint32())
	}
	return len(p), nil
}
