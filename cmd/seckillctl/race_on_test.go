//go:build race

package main

// raceEnabled: the tests run with -race, so seckilld is built with it too.
const raceEnabled = true
