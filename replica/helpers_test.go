package replica

import (
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/ledger"
)

// startEtcd starts a real etcd member for the test and returns a client
// of it; both end with the test.
func startEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	srv := etcdtest.Start(t)
	c, err := ledger.Dial([]string{srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
