//go:build race

package httpapi_test

// raceEnabled: the tests run with -race, so the daemon is built with it too
// (its packages are then already compiled, and races in it are caught).
const raceEnabled = true
