package docs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
)

// docsAdminToken is the admin token of the seckilld a document's blocks
// run against, in their environment as SECKILL_ADMIN_TOKEN.
const docsAdminToken = "docs-admin-token"

// docsAddr is the address the documents use (make run's); the blocks run
// with the address of the server started for them instead.
const docsAddr = "127.0.0.1:8080"

// Every shell block marked "runnable" runs, in order, in one bash per
// document, against a seckilld started for that document on a free port
// with a temporary data dir (./data in the blocks' working directory); a
// block followed by an "output" block must print that text, once the
// values that change from run to run are masked (mask).
func TestDocsRunnableBlocks(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "jq", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the runnable blocks of the docs need %s (.ci/run installs it): %v", tool, err)
		}
	}
	for _, file := range markdownFiles(t) {
		all := blocks(file, readFile(t, file))
		var runnable []int
		for i, b := range all {
			if b.has("runnable") {
				runnable = append(runnable, i)
			}
		}
		if len(runnable) == 0 {
			continue
		}
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			runDocument(t, all, runnable)
		})
	}
}

var blockMarker = regexp.MustCompile(`(?m)^@@docs-block (\d+)@@\n`)

// runDocument starts a seckilld and runs the document's runnable blocks
// (their indexes in all) in one bash, then checks each output block.
func runDocument(t *testing.T, all []block, runnable []int) {
	bin := binDir(t)
	work := t.TempDir()
	flags := strings.Fields(all[runnable[0]].flags)
	d := seckilldtest.Start(t, filepath.Join(bin, "seckilld"), filepath.Join(work, "data"),
		[]string{"SECKILL_ADMIN_TOKEN=" + docsAdminToken}, flags...)
	addr := strings.TrimPrefix(d.Base, "http://")

	var script strings.Builder
	script.WriteString("set -eo pipefail\n")
	for _, i := range runnable {
		fmt.Fprintf(&script, "printf '\\n@@docs-block %d@@\\n'\n", i)
		script.WriteString(strings.ReplaceAll(all[i].text, docsAddr, addr))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = work
	cmd.Env = []string{
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + work,
		"LC_ALL=C.UTF-8",
		"SECKILL_ADMIN_TOKEN=" + docsAdminToken,
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()

	outputs := map[int]string{}
	last := -1
	marks := blockMarker.FindAllStringSubmatchIndex(stdout.String(), -1)
	for k, m := range marks {
		i, _ := strconv.Atoi(stdout.String()[m[2]:m[3]])
		end := stdout.Len()
		if k+1 < len(marks) {
			end = marks[k+1][0]
		}
		outputs[i] = stdout.String()[m[1]:end]
		last = i
	}
	if runErr != nil {
		where := "before its first block"
		if last >= 0 {
			where = fmt.Sprintf("in the block at %s:%d", all[last].file, all[last].line)
		}
		t.Fatalf("the runnable blocks stopped %s: %v\nstdout of that block:\n%s\nstderr:\n%s",
			where, runErr, outputs[last], stderr.String())
	}
	for _, i := range runnable {
		if i+1 >= len(all) || !all[i+1].has("output") {
			continue
		}
		want, got := all[i+1].text, outputs[i]
		if !outputMatches(want, got) {
			t.Errorf("%s:%d: the block printed\n%s\nthe document shows (%s:%d)\n%s\nmasked, got:\n%s\nmasked, want:\n%s",
				all[i].file, all[i].line, got, all[i+1].file, all[i+1].line, want, mask(got), mask(want))
		}
	}
}

// masks replace what differs from run to run with a placeholder, in the
// output a block printed and in the document's text alike.
var masks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "<time>"},
	{regexp.MustCompile(`~[0-9a-f]{16}\b`), "~<tag>"},
	{regexp.MustCompile(`\b[0-9a-f]{64}\b`), "<hash>"},
	{regexp.MustCompile(`\b[0-9a-f]{16}-(\d+)\b`), "<history>-$1"},
	{regexp.MustCompile(`\bep\.[A-Za-z0-9_-]{22}`), "ep.<nonce>"},
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), docsAddr},
}

func mask(s string) string {
	for _, m := range masks {
		s = m.re.ReplaceAllString(s, m.with)
	}
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return strings.Join(lines, "\n")
}

// outputMatches reports whether got, masked, is the text want shows,
// masked: "…" within a line of want matches anything on that line, and a
// line of want that is only "…" matches any number of lines.
func outputMatches(want, got string) bool {
	var re strings.Builder
	re.WriteString(`\A`)
	for i, line := range strings.Split(mask(want), "\n") {
		if strings.TrimSpace(line) == "…" {
			re.WriteString(`(?:[^\n]*\n)*?`)
			continue
		}
		if i > 0 && !strings.HasSuffix(re.String(), `*?`) {
			re.WriteString(`\n`)
		}
		parts := strings.Split(line, "…")
		for k, p := range parts {
			if k > 0 {
				re.WriteString(`[^\n]*`)
			}
			re.WriteString(regexp.QuoteMeta(p))
		}
	}
	re.WriteString(`\z`)
	return regexp.MustCompile(re.String()).MatchString(mask(got))
}
