//go:build !race

package httpapi_test

// raceEnabled: the tests run without -race.
const raceEnabled = false
