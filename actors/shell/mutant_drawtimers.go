//go:build mutant_drawtimers

package shell

// mutantDrawTimers plants a bug for the simulator to find (make
// sim-mutants): every round of a draw starts a timer, even while one is
// pending, so that the pauses overlap into a faster draw. Only a build
// with the tag mutant_drawtimers has it.
const mutantDrawTimers = true
