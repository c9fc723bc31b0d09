//go:build mutant_keeptorntail

package wal

// mutantKeepTornTail plants a bug for the simulator to find (make sim-mutants): not cutting a torn tail (Open leaves the damaged bytes and appends after them).
// Only a build with the tag mutant_keeptorntail has it.
const mutantKeepTornTail = true
