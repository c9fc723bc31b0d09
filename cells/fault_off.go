//go:build !faultinject

package cells

// loseTopUpAnswer is the fault point of fault_on.go; without the
// faultinject build tag no answer is ever lost on purpose.
func loseTopUpAnswer(string) bool { return false }
