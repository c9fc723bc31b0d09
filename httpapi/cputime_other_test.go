//go:build !unix

package httpapi_test

// processCPU is not measured here: 0, and the benchmarks report no
// cpu-ns/op.
func processCPU() int64 { return 0 }
