//go:build !mutant_ha_basecopynosnapshot

package stream

// mutantHABaseCopyNoSnapshot is false in every real build: see mutant_ha_basecopynosnapshot.go.
const mutantHABaseCopyNoSnapshot = false
