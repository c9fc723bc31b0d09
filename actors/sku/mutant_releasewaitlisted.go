//go:build mutant_releasewaitlisted

package sku

// mutantReleaseWaitlisted plants a bug for the simulator to find (make
// sim-mutants, campaign mode): DRAW_DONE reports the waitlisted entries as
// lost too, so their users may buy another SKU of a campaign-scope
// campaign and then be promoted from the waitlist: two live purchases.
// Only a build with the tag mutant_releasewaitlisted has it.
const mutantReleaseWaitlisted = true
