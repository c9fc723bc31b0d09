//go:build planted_grant_not_idempotent

package sku

// plantedNonIdempotentGrant is a planted bug for the negative control of
// the cell tests: with the build tag planted_grant_not_idempotent a GRANT
// for an allocation already in the log is applied again. Never ship it.
const plantedNonIdempotentGrant = true
