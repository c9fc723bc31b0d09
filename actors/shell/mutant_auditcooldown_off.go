//go:build !mutant_auditcooldown

package shell

// mutantAuditCoolDown is false in every real build: see mutant_auditcooldown.go.
const mutantAuditCoolDown = false
