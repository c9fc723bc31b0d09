//go:build !mutant_ha_promotenotsync

package replica

// mutantHAPromoteNotSync is false in every real build: see mutant_ha_promotenotsync.go.
const mutantHAPromoteNotSync = false
