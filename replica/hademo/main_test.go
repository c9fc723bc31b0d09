package main

import (
	"strings"
	"testing"

	"github.com/seckill/seckill/internal/testbin"
)

// TestHADemo runs make ha-demo once, small: it must end with every
// check held (run returns nil only then) and say so.
func TestHADemo(t *testing.T) {
	bin := testbin.Dir(t, nil, "github.com/seckill/seckill/cmd/seckilld",
		"github.com/seckill/seckill/cmd/seckill-router", "github.com/seckill/seckill/cmd/seckillctl")
	var out strings.Builder
	if err := run(config{bin: bin, data: t.TempDir(), before: 200, after: 50}, &out); err != nil {
		t.Fatalf("ha-demo: %v\n%s", err, out.String())
	}
	for _, want := range []string{"a (", "leads epoch 1", "b took over in epoch 2", "acknowledged reservations found through the router",
		"rejoined as b's standby", "both data dirs clean"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("ha-demo printed no %q:\n%s", want, out.String())
		}
	}
	t.Log(out.String())
}
