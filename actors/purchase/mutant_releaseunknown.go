//go:build mutant_releaseunknown

package purchase

// mutantReleaseUnknown plants a bug for the simulator to find (make
// sim-mutants, campaign mode): a reserve whose answer was lost ends its
// claim as if refused, so the user may buy on another SKU while the first
// may still hold a purchase. Only a build with the tag
// mutant_releaseunknown has it.
const mutantReleaseUnknown = true
