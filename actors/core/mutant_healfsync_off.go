//go:build !mutant_healfsync

package core

// mutantHealFsync is false in every real build: see mutant_healfsync.go.
const mutantHealFsync = false
