//go:build !mutant_ha_snapshotpastkept

package stream

// mutantHASnapshotPastKept is false in every real build: see mutant_ha_snapshotpastkept.go.
const mutantHASnapshotPastKept = false
