//go:build !hastream

package main

import (
	"errors"
	"log/slog"
)

// Until package replica/stream is part of the tree, a replica refuses to
// start: it would have no way to copy or ship a log.
type noStream struct{}

func newStreamReplicator() replicator { return noStream{} }

var errNoStream = errors.New("this build has no replication stream (package replica/stream)")

func (noStream) BeginEpoch(string, uint64, *slog.Logger) error   { return errNoStream }
func (noStream) NewPrimary(primaryConfig) (primaryStream, error) { return nil, errNoStream }
func (noStream) NewStandby(standbyConfig) (standbyStream, error) { return nil, errNoStream }
