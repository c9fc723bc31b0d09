package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
	"github.com/seckill/seckill/internal/benchsize"
	"github.com/seckill/seckill/internal/etcdtest"
)

// BenchmarkReplicaSetDefineCampaign measures campaign PUTs of 300 SKUs
// (4 at tiny sizes) on the primary of a replica set of two with
// --sync-strict: each SKU's definition is committed once its record is
// fsynced on the primary and acknowledged by the standby. "new" PUTs a
// new campaign each time (each SKU's folder and log made on both
// replicas), "raise" PUTs one campaign again with every sale_limit
// raised (one record a SKU). It prints SKUs/s.
func BenchmarkReplicaSetDefineCampaign(b *testing.B) {
	n := benchsize.Pick(300, 4)
	etcd := etcdtest.Start(b)
	bin := seckilldtest.Build(b, raceEnabled)
	dir := b.TempDir()
	a := startReplica(b, bin, filepath.Join(dir, "a"), etcd.Endpoint, "a", "--sync-strict")
	waitHealth(b, a, "a leads", func(h replicaHealth) bool { return h.Role == "primary" })
	startReplica(b, bin, filepath.Join(dir, "b"), etcd.Endpoint, "b", "--sync-strict")
	waitSync(b, a.Base, "b")
	put := func(b *testing.B, id string, raise int) {
		body := bigCampaign(id, n)
		for _, s := range body["skus"].([]map[string]any) {
			s["sale_limit"] = s["sale_limit"].(int) + raise
		}
		if code, answer, err := adminCall(http.MethodPut, a.Base+"/admin/campaigns/"+id, body); err != nil || code/100 != 2 {
			b.Fatalf("PUT of %d SKUs: %d %v %v", n, code, answer, err)
		}
	}
	put(b, "raised", 0)
	raised := 0 // sale_limit only grows, over every run of b.N
	for _, raise := range []bool{false, true} {
		name := map[bool]string{false: "new", true: "raise"}[raise]
		b.Run(name, func(b *testing.B) {
			start := time.Now()
			for i := range b.N {
				if raise {
					raised++
					put(b, "raised", raised)
				} else {
					put(b, fmt.Sprintf("new-%d-%d", start.UnixNano(), i), 0)
				}
			}
			b.ReportMetric(float64(b.N*n)/time.Since(start).Seconds(), "SKUs/s")
		})
	}
}
