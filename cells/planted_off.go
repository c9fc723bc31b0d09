//go:build !planted_return_after_credit && !mutant_creditbeforereturn

package cells

// plantedCreditBeforeReturn is false: a return is logged (RETURN, durable)
// before the ledger credits it. See planted_on.go.
const plantedCreditBeforeReturn = false
