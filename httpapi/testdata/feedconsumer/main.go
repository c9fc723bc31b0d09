// Command feedconsumer is the consumer the feed's kill -9 test runs as a
// child process, and an example of a consumer loop: it keeps its cursor in
// a file, appends "<event id> <sha256 of the event>" per event to
// events.log before it saves the cursor (so a kill between the two repeats
// events, never skips one: dedupe by id), and reads the feed with long
// polls. With -exit-at-end it exits 0 once a page is empty at the durable
// end of the log.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	base := flag.String("base", "", "seckilld base URL")
	token := flag.String("token", "", "admin token")
	feed := flag.String("feed", "", "feed path, e.g. /admin/campaigns/c/skus/s/events")
	dir := flag.String("dir", "", "state directory (cursor, events.log)")
	exitAtEnd := flag.Bool("exit-at-end", false, "exit once caught up")
	flag.Parse()
	if err := run(*base, *token, *feed, *dir, *exitAtEnd); err != nil {
		fmt.Fprintln(os.Stderr, "feedconsumer:", err)
		os.Exit(1)
	}
}

func run(base, token, feed, dir string, exitAtEnd bool) error {
	log, err := os.OpenFile(filepath.Join(dir, "events.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	for {
		cursor, _ := os.ReadFile(filepath.Join(dir, "cursor"))
		req, _ := http.NewRequest(http.MethodGet, base+feed+"?limit=50&wait=1s&after="+url.QueryEscape(strings.TrimSpace(string(cursor))), nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%v %d %s", err, resp.StatusCode, body)
		}
		var page struct {
			Events       []json.RawMessage `json:"events"`
			NextCursor   string            `json:"next_cursor"`
			DurableIndex uint64            `json:"durable_index"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return err
		}
		var lines strings.Builder
		for _, raw := range page.Events {
			var e struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(raw, &e); err != nil {
				return err
			}
			sum := sha256.Sum256(raw)
			fmt.Fprintf(&lines, "%s %s\n", e.ID, hex.EncodeToString(sum[:]))
		}
		if _, err := log.WriteString(lines.String()); err != nil {
			return err
		}
		tmp := filepath.Join(dir, "cursor.tmp")
		if err := os.WriteFile(tmp, []byte(page.NextCursor), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, "cursor")); err != nil {
			return err
		}
		if exitAtEnd && len(page.Events) == 0 && strings.HasSuffix(page.NextCursor, fmt.Sprintf("-%d", page.DurableIndex)) {
			return nil
		}
	}
}
