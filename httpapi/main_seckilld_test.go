package httpapi

import (
	"testing"

	"github.com/seckill/seckill/internal/testbin"
)

// TestMain builds each command once for all the tests of the package that
// run it (seckilld, the feed consumer).
func TestMain(m *testing.M) { testbin.Main(m) }
