//go:build !mutant_timerexpiry

package sku

// mutantTimerExpiry is false in every real build: see mutant_timerexpiry.go.
const mutantTimerExpiry = false
