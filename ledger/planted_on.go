//go:build planted_alloc_no_create_guard

package ledger

// plantedNoCreateGuard is a planted bug for the negative control of the
// cell tests: with the build tag planted_alloc_no_create_guard, Allocate
// neither looks for an existing allocation nor guards its creation, so a
// retry of a top-up whose answer was lost grants a second time. Never ship it.
const plantedNoCreateGuard = true
