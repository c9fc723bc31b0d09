//go:build !planted_alloc_no_create_guard

package ledger

// plantedNoCreateGuard is false: an allocation is created only if its key
// does not exist. The build tag planted_alloc_no_create_guard sets it, to
// show that the cell tests catch a second allocation for one (cell, seq).
const plantedNoCreateGuard = false
