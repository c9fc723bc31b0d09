//go:build !mutant_ackbeforefsync

package wal

// mutantAckBeforeFsync is false in every real build: see mutant_ackbeforefsync.go.
const mutantAckBeforeFsync = false
