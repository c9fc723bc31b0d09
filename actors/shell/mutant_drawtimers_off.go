//go:build !mutant_drawtimers

package shell

// mutantDrawTimers is false in every real build: see mutant_drawtimers.go.
const mutantDrawTimers = false
