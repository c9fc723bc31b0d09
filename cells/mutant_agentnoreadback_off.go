//go:build !mutant_agentnoreadback

package cells

// mutantNoReadBack is false in every real build: see mutant_agentnoreadback.go.
const mutantNoReadBack = false
