//go:build !mutant_keeptorntail

package wal

// mutantKeepTornTail is false in every real build: see mutant_keeptorntail.go.
const mutantKeepTornTail = false
