//go:build race

package docs

// raceEnabled: the commands the tests run are built with -race too.
const raceEnabled = true
