//go:build !mutant_ha_acceptlowerepoch

package stream

// mutantHAAcceptLowerEpoch is false in every real build: see mutant_ha_acceptlowerepoch.go.
const mutantHAAcceptLowerEpoch = false
