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
	"strings"
	"time"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/skudir"
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
		if err := required("snapshot --server", flagGiven{"--campaign", *campaign != ""}, flagGiven{"--sku", *skuID != ""},
			flagGiven{tokenFlag, *token != ""}); err != nil {
			return err
		}
		if err := client.CheckBaseURL(*server); err != nil {
			return usageError("snapshot: --server: %v", err)
		}
		return snapshotOnline(*server, *token, *campaign, *skuID, *timeout, stdout)
	}
	return snapshotOffline(skudir.FromPath(pos[0]).String(), stdout)
}

// snapshotOffline writes a snapshot of a stopped SKU at its log's last
// record. It prunes nothing and truncates nothing: the engine does that
// after its next snapshot.
func snapshotOffline(dir string, stdout io.Writer) (err error) {
	start := time.Now()
	if !skudir.Dir(dir).HasWAL() {
		return fmt.Errorf("snapshot: %s holds no SKU (no wal folder): name <data-dir>/<campaign>/<sku> of a SKU the engine defined", dir)
	}
	release, err := lockSKUDir(dir)
	if err != nil {
		return err
	}
	defer func() {
		if rerr := release(); err == nil {
			err = rerr
		}
	}()
	st, err := loadState(dir, loadOptions{})
	if err != nil {
		return err
	}
	if !st.m.Defined() {
		return fmt.Errorf("snapshot: %s: the log holds no definition: nothing to snapshot", dir)
	}
	info, err := snapshot.Write(skudir.Dir(dir).Snapshots(), st.m.Freeze(), st.index, snapshot.Options{})
	if err != nil {
		return err
	}
	return writeJSON(stdout, snapshotWrittenJSON{Path: info.Path, Index: info.Index, Reservations: info.Reservations,
		Bytes: info.Bytes, TookMs: time.Since(start).Milliseconds(), StateHash: hashHex(st.m.Hash())})
}

// snapshotOnline asks a running seckilld for a snapshot through the admin
// route and prints its answer. A refusal (non-2xx) prints nothing on
// stdout and is exit status 2: the server turned down the request (a wrong
// token, an unknown SKU) or could not do it, and no check failed.
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
	if resp.StatusCode/100 != 2 {
		return refusal(u, resp.Status, resp.StatusCode, body, campaign, skuID)
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, body, "", "  ") == nil {
		body = append(pretty.Bytes(), '\n')
	}
	_, err = stdout.Write(body)
	return err
}

// refusalBodyMax bounds the server's answer quoted in a refusal's message.
const refusalBodyMax = 512

// refusal describes a non-2xx answer to an online snapshot, with a hint
// for the usual causes.
func refusal(u, status string, code int, body []byte, campaign, skuID string) error {
	msg := strings.TrimSpace(string(body[:min(len(body), refusalBodyMax)]))
	switch code {
	case http.StatusUnauthorized:
		msg += " (the admin token was refused: check --admin-token or SECKILL_ADMIN_TOKEN)"
	case http.StatusNotFound:
		msg += fmt.Sprintf(" (the server has no SKU %s/%s)", campaign, skuID)
	}
	return fmt.Errorf("snapshot: %s: %s: %s", u, status, msg)
}
