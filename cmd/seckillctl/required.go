package main

import (
	"fmt"
	"strings"
)

// flagGiven is a required flag of a command and whether it was given.
type flagGiven struct {
	name  string // as the user types it: "--campaign"
	given bool
}

// tokenFlag is the admin token's flag as a missing one is named.
const tokenFlag = "--admin-token (or SECKILL_ADMIN_TOKEN)"

// required is the usage error of cmd when some of flags were not given,
// naming those first and then everything cmd needs, or nil: a user told
// only "needs A, B and C" has to find which of them it was.
func required(cmd string, flags ...flagGiven) error {
	var missing, all []string
	for _, f := range flags {
		all = append(all, f.name)
		if !f.given {
			missing = append(missing, f.name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	verb := "is"
	if len(missing) > 1 {
		verb = "are"
	}
	return usageError("%s: %s %s missing (it needs %s)", cmd, andList(missing), verb, andList(all))
}

// andList joins "a", "a and b", "a, b and c".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return fmt.Sprintf("%s and %s", strings.Join(items[:len(items)-1], ", "), items[len(items)-1])
}
