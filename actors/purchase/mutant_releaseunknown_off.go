//go:build !mutant_releaseunknown

package purchase

// mutantReleaseUnknown is false in every real build: see
// mutant_releaseunknown.go.
const mutantReleaseUnknown = false
