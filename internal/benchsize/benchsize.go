// Package benchsize is the size knob of the project's benchmarks. The
// make bench-* targets run them at their full sizes, the ones their
// figures are quoted at; make test runs every benchmark once with
// SECKILL_BENCH_TINY=1, at sizes that take a moment, so that a change
// that breaks a benchmark (a rule it no longer follows, a helper that
// moved) fails the tests instead of the next measurement. Figures printed
// at tiny sizes mean nothing.
package benchsize

import (
	"os"
	"sync"
)

// Env is the environment variable that asks for tiny sizes ("1").
const Env = "SECKILL_BENCH_TINY"

var tiny = sync.OnceValue(func() bool { return os.Getenv(Env) == "1" })

// Tiny reports whether the benchmarks run at tiny sizes.
func Tiny() bool { return tiny() }

// Pick returns full, or tiny when the benchmarks run at tiny sizes.
func Pick[T any](full, tiny T) T {
	if Tiny() {
		return tiny
	}
	return full
}
