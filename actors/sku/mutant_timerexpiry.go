//go:build mutant_timerexpiry

package sku

// mutantTimerExpiry plants a bug for the simulator to find (make sim-mutants): deciding expiry by the timer instead of expire_at (a payment is taken while the reservation is still PENDING_PAYMENT, even at or after its expire_at).
// Only a build with the tag mutant_timerexpiry has it.
const mutantTimerExpiry = true
