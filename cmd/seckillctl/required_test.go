package main

import (
	"strings"
	"testing"
)

// TestRequiredNamesWhatIsMissing: a command run without some of its
// required flags names those, then all it needs; with all given, nothing.
func TestRequiredNamesWhatIsMissing(t *testing.T) {
	t.Setenv("SECKILL_ADMIN_TOKEN", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"snapshot", "--server", "http://127.0.0.1:1", "--campaign", "c"},
			"snapshot --server: --sku and --admin-token (or SECKILL_ADMIN_TOKEN) are missing (it needs --campaign, --sku and --admin-token (or SECKILL_ADMIN_TOKEN))"},
		{[]string{"restore", "--to", "x"}, "restore: --from is missing (it needs --from and --to)"},
		{[]string{"cells", "return", "--etcd", "127.0.0.1:1", "--campaign", "c", "--sku", "s", "--units", "1"},
			"cells return: --cell and --id are missing (it needs --campaign, --sku, --cell, --units and --id)"},
		{[]string{"ha", "status", "--etcd", "127.0.0.1:1", "--admin-token", "t"},
			"ha status: --replica-set is missing (it needs --etcd, --replica-set and --admin-token (or SECKILL_ADMIN_TOKEN))"},
		{[]string{"dashboard-link"}, "dashboard-link: --server and --admin-token (or SECKILL_ADMIN_TOKEN) are missing"},
	} {
		code, _, stderr := ctl(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, stderr, c.want)
		}
	}
	if err := required("x", flagGiven{"--a", true}, flagGiven{"--b", true}); err != nil {
		t.Fatalf("all given: %v", err)
	}
}
