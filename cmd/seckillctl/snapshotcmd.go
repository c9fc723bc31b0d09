package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/seckill/seckill/snapshot"
)

// snapshotWrittenJSON reports an offline snapshot.
type snapshotWrittenJSON struct {
	Path         string `json:"path"`
	Index        uint64 `json:"index"`
	Reservations uint32 `json:"reservations"`
	Bytes        int64  `json:"bytes"`
	TookMs       int64  `json:"took_ms"`
	StateHash    string `json:"state_hash"`
}

func runSnapshot(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("snapshot", flag.ContinueOnError)
	server := fs.String("server", "", "URL of a running seckilld (online snapshot)")
	token := fs.String("admin-token", "", "admin bearer token (default $SECKILL_ADMIN_TOKEN)")
	campaign := fs.String("campaign", "", "campaign id (online)")
	skuID := fs.String("sku", "", "SKU id (online)")
	timeout := fs.Duration("timeout", time.Minute, "how long to wait for the server (online)")
	want := 1
	for _, a := range args {
		if a == "--server" || a == "-server" || strings.HasPrefix(a, "--server=") || strings.HasPrefix(a, "-server=") {
			want = 0
		}
	}
	pos, err := parse(fs, args, want)
	if err != nil {
		return err
	}
	if *server != "" {
		if *token == "" {
			*token = os.Getenv("SECKILL_ADMIN_TOKEN")
		}
		if *campaign == "" || *skuID == "" || *token == "" {
			return usageError("snapshot --server needs --campaign, --sku and --admin-token (or SECKILL_ADMIN_TOKEN)")
		}
		return snapshotOnline(*server, *token, *campaign, *skuID, *timeout, stdout)
	}
	return snapshotOffline(skuDirOf(pos[0]), stdout)
}

// snapshotOffline writes a snapshot of a stopped SKU at its log's last
// record. It prunes nothing and truncates nothing: the engine does that
// after its next snapshot.
func snapshotOffline(dir string, stdout io.Writer) error {
	start := time.Now()
	st, err := loadState(dir, loadOptions{})
	if err != nil {
		return err
	}
	if !st.m.Defined() {
		return &checkFailed{msg: dir + ": the log holds no definition: nothing to snapshot"}
	}
	info, err := snapshot.Write(filepath.Join(dir, "snapshots"), st.m.Freeze(), st.index, snapshot.Options{})
	if err != nil {
		return err
	}
	return writeJSON(stdout, snapshotWrittenJSON{Path: info.Path, Index: info.Index, Reservations: info.Reservations,
		Bytes: info.Bytes, TookMs: time.Since(start).Milliseconds(), StateHash: hashHex(st.m.Hash())})
}

// snapshotOnline asks a running seckilld for a snapshot through the admin
// route and prints its answer; a refusal (non-2xx) is exit status 1.
func snapshotOnline(server, token, campaign, skuID string, timeout time.Duration, stdout io.Writer) error {
	u := strings.TrimRight(server, "/") + "/admin/campaigns/" + url.PathEscape(campaign) + "/skus/" + url.PathEscape(skuID) + "/snapshot"
	req, err := http.NewRequest(http.MethodPost, u, nil)
	if err != nil {
		return usageError("--server: %v", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, body, "", "  ") == nil {
		body = append(pretty.Bytes(), '\n')
	}
	if _, err := stdout.Write(body); err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return &checkFailed{msg: fmt.Sprintf("%s: %s", u, resp.Status)}
	}
	return nil
}
