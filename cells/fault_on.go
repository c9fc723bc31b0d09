//go:build faultinject

package cells

import (
	"os"
	"sync"
)

// loseTopUpAnswer, in test builds (tag faultinject) only, drops the answer
// of the first top-up of the cell named by SECKILL_FAULT_LOSE_TOPUP_ANSWER
// after the ledger committed it: the process test's precise "committed,
// answer lost" partition, which a proxy cannot time.
func loseTopUpAnswer(cell string) bool {
	if os.Getenv("SECKILL_FAULT_LOSE_TOPUP_ANSWER") != cell {
		return false
	}
	lost := false
	loseOnce.Do(func() { lost = true })
	return lost
}

var loseOnce sync.Once
