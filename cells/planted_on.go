//go:build planted_return_after_credit || mutant_creditbeforereturn

package cells

// plantedCreditBeforeReturn is a planted bug for the negative control of
// the cell tests and the simulator's cells mode: with the build tag
// planted_return_after_credit (make sim-mutants: mutant_creditbeforereturn) the agent
// credits a return to the ledger first and would log RETURN after, and
// the process dies between the two (emulated: the RETURN is never
// logged), so the cell keeps selling tokens the ledger gives to others.
// Never ship it.
const plantedCreditBeforeReturn = true
