//go:build !mutant_releasewaitlisted

package sku

// mutantReleaseWaitlisted is false in every real build: see
// mutant_releasewaitlisted.go.
const mutantReleaseWaitlisted = false
