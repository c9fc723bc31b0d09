//go:build planted_return_after_credit

package cells

// plantedCreditBeforeReturn is a planted bug for the negative control of
// the cell tests: with the build tag planted_return_after_credit the agent
// credits a return to the ledger first and would log RETURN after, and
// the process dies between the two (emulated: the RETURN is never
// logged), so the cell keeps selling tokens the ledger gives to others.
// Never ship it.
const plantedCreditBeforeReturn = true
