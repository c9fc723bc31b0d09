package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/seckill/seckill/client"
)

// runDashboardLink asks a running seckilld for a one-time login link to
// its dashboard (POST /admin/dashboard/login-links) and prints the link
// alone on stdout, for a browser that cannot be given the admin token (a
// headless capture, a kiosk screen): opened once, within a minute, it
// sets the dashboard's session cookie and shows the dashboard. The admin
// token stays out of the link. When it works till, and the session it
// opens, go to stderr.
func runDashboardLink(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dashboard-link", flag.ContinueOnError)
	server := fs.String("server", "", "URL of the running seckilld (required)")
	token := fs.String("admin-token", "", "admin bearer token (default $SECKILL_ADMIN_TOKEN)")
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait for the server")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if *token == "" {
		*token = os.Getenv("SECKILL_ADMIN_TOKEN")
	}
	if err := required("dashboard-link", flagGiven{"--server", *server != ""}, flagGiven{tokenFlag, *token != ""}); err != nil {
		return err
	}
	if err := client.CheckBaseURL(*server); err != nil {
		return usageError("dashboard-link: --server: %v", err)
	}
	base := strings.TrimRight(*server, "/")
	u := base + "/admin/dashboard/login-links"
	req, err := http.NewRequest(http.MethodPost, u, nil)
	if err != nil {
		return usageError("--server: %v", err)
	}
	req.Header.Set("Authorization", "Bearer "+*token)
	resp, err := (&http.Client{Timeout: *timeout}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated {
		msg := strings.TrimSpace(string(body[:min(len(body), refusalBodyMax)]))
		if resp.StatusCode == http.StatusUnauthorized {
			msg += " (the admin token was refused: check --admin-token or SECKILL_ADMIN_TOKEN)"
		}
		return fmt.Errorf("dashboard-link: %s: %s: %s", u, resp.Status, msg)
	}
	var link struct {
		LoginURL       string `json:"login_url"`
		ExpiresAt      string `json:"expires_at"`
		SessionSeconds int64  `json:"session_seconds"`
	}
	if err := json.Unmarshal(body, &link); err != nil || !strings.HasPrefix(link.LoginURL, "/") {
		return fmt.Errorf("dashboard-link: %s: not a login link: %q", u, body)
	}
	fmt.Fprintln(stdout, base+link.LoginURL)
	fmt.Fprintf(stderr, "seckillctl: the link works once, until %s; it opens a dashboard session of %v in that browser\n",
		link.ExpiresAt, time.Duration(link.SessionSeconds)*time.Second)
	return nil
}
