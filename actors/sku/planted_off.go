//go:build !planted_grant_not_idempotent

package sku

// plantedNonIdempotentGrant is false: GRANT is idempotent by allocation
// seq. The build tag planted_grant_not_idempotent sets it, to show that the
// cell fault tests catch a GRANT applied twice (planted_on.go).
const plantedNonIdempotentGrant = false
