//go:build mutant_auditcooldown

package shell

// mutantAuditCoolDown plants a bug for the simulator to find (make
// sim-mutants): a recount starts the cool-down only when it took longer
// than a second, so that quick recounts follow each other at once. Only a
// build with the tag mutant_auditcooldown has it.
const mutantAuditCoolDown = true
