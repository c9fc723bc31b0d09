package main

import (
	"os"
	"testing"

	"github.com/seckill/seckill/orders/orderstest"
)

// TestMain has the package's tests share one PostgreSQL, a database each
// (orderstest.Database).
func TestMain(m *testing.M) { os.Exit(orderstest.WithPostgres(m).Run()) }
