//go:build !mutant_retryfsync

package wal

// mutantRetryFsync is false in every real build: see mutant_retryfsync.go.
const mutantRetryFsync = false
