package sim

import (
	"os"
	"strings"
	"testing"
)

func TestQuick(t *testing.T) {
	fails := 0
	for seed := uint64(1); seed <= 300; seed++ {
		res := Run(Options{Seed: seed, Steps: 200})
		if res.Err != nil {
			fails++
			if fails <= 5 {
				var b strings.Builder
				Run(Options{Seed: seed, Steps: res.Step + 1, Trace: &b})
				lines := strings.Split(b.String(), "\n")
				if len(lines) > 12 {
					lines = lines[len(lines)-12:]
				}
				t.Errorf("seed %d step %d: %v\n%s", seed, res.Step, res.Err, strings.Join(lines, "\n"))
			}
		}
	}
	t.Logf("%d failures", fails)
	_ = os.Stdout
}
