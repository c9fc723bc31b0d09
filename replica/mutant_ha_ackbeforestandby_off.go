//go:build !mutant_ha_ackbeforestandby

package replica

// mutantHAAckBeforeStandby is false in every real build: see mutant_ha_ackbeforestandby.go.
const mutantHAAckBeforeStandby = false
