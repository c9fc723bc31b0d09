//go:build !mutant_ha_dropafterack

package replica

// mutantHADropAfterAck is false in every real build: see mutant_ha_dropafterack.go.
const mutantHADropAfterAck = false
