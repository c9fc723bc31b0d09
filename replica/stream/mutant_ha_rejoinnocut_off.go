//go:build !mutant_ha_rejoinnocut

package stream

// mutantHARejoinNoCut is false in every real build: see mutant_ha_rejoinnocut.go.
const mutantHARejoinNoCut = false
