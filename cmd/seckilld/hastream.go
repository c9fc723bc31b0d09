package main

import (
	"log/slog"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/replica"
	"github.com/seckill/seckill/replica/stream"
	"github.com/seckill/seckill/wal"
)

// streamReplicator is the replicator over package replica/stream.
type streamReplicator struct{ fsync wal.FsyncMode }

func newStreamReplicator(fsync wal.FsyncMode) replicator { return streamReplicator{fsync} }

func (streamReplicator) BeginEpoch(dataDir string, epoch uint64, log *slog.Logger) error {
	return stream.BeginEpoch(dataDir, epoch, log)
}

func (streamReplicator) NewPrimary(c primaryConfig) (primaryStream, error) {
	p, err := stream.NewPrimary(stream.PrimaryConfig{Set: c.set, Name: c.name, Epoch: c.epoch, DataDir: c.dataDir,
		Listener: c.ln, Strict: c.strict, Logger: c.log, Registerer: c.reg})
	if err != nil {
		return nil, err
	}
	return streamPrimary{p}, nil
}

func (r streamReplicator) NewStandby(c standbyConfig) (standbyStream, error) {
	s, err := stream.NewStandby(stream.StandbyConfig{Set: c.set, Name: c.name, DataDir: c.dataDir, Primary: c.primary,
		WAL: wal.Options{Fsync: r.fsync}, Logger: c.log, Registerer: c.reg})
	if err != nil {
		return nil, err
	}
	return streamStandby{s}, nil
}

type streamPrimary struct{ p *stream.Primary }

func (s streamPrimary) Replicate(cfg *actors.Config) { cfg.Replication = s.p.Replication() }
func (s streamPrimary) Wait(standbys []string)       { s.p.Wait(standbys) }
func (s streamPrimary) Close() error                 { return s.p.Close() }

func (s streamPrimary) Followers() []follower {
	var out []follower
	for _, st := range s.p.Standbys() {
		out = append(out, follower{Follower: replica.Follower{Name: st.Name, Connected: st.Connected, CaughtUp: st.CaughtUp,
			LastAck: st.LastAck, LagRecords: st.LagRecords, NeedsBase: st.NeedsBase}, LagMillis: st.LagMillis})
	}
	return out
}

type streamStandby struct{ s *stream.Standby }

func (s streamStandby) Close() error                 { return s.s.Close() }
func (s streamStandby) Reads() httpapi.StandbyReader { return s.s }

func (s streamStandby) Status() standbyStatus {
	st := s.s.Status()
	out := standbyStatus{Epoch: st.Epoch, Connected: st.Connected, Records: st.Records, LastError: st.LastError}
	for _, k := range st.SKUs {
		out.SKUs = append(out.SKUs, copiedSKU{CampaignID: k.CampaignID, SKUID: k.SKUID, LastIndex: k.LastIndex,
			CommitIndex: k.CommitIndex, Applied: k.Applied})
	}
	return out
}
