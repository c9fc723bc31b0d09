//go:build mutant_agentnoreadback

package cells

// mutantNoReadBack plants a bug for the simulator to find (make
// sim-mutants): after a top-up whose outcome is unknown (etcd did not
// answer, or its answer was lost after the commit) the agent asks the next
// seq instead of the same one, without reading back what the first made,
// so an allocation the ledger committed may never reach the log. Only a
// build with the tag mutant_agentnoreadback has it.
const mutantNoReadBack = true
