//go:build race

package sim

// raceEnabled scales the CI slice down under the race detector, which
// slows a history about tenfold.
const raceEnabled = true
