//go:build !mutant_backoffreset

package shell

// mutantBackoffReset is false in every real build: see mutant_backoffreset.go.
const mutantBackoffReset = false
