package main

import (
	"testing"

	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
)

// TestMain builds seckilld once for all the tests of the package that run it.
func TestMain(m *testing.M) { seckilldtest.Main(m) }
