//go:build !mutant_probeskip

package purchase

// mutantProbeSkip is false in every real build: see mutant_probeskip.go.
const mutantProbeSkip = false
