package httpapi

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/valyala/fasthttp"
)

// notAnswered are the engine's outcomes no route answers as themselves:
// NONE is no outcome, NOT_EXPIRED stays inside the engine (its expiry),
// INVALID is answered as BAD_BEACON (a draw's signature) or
// DEFINITION_CONFLICT (a definition), and OK is the success of reads and
// admin commands (200, or 201 for a campaign PUT that created it).
var notAnswered = map[string]bool{"NONE": true, "NOT_EXPIRED": true, "INVALID": true, "OK": true}

// reasonConstants returns the string constants named reason… or Reason…
// of this package's non-test files (reasonPrefix… are prefixes of metric
// labels, not reasons).
func reasonConstants(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					n := name.Name
					if !strings.HasPrefix(strings.ToLower(n), "reason") || strings.HasPrefix(n, "reasonPrefix") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, _ := strconv.Unquote(lit.Value)
					out[v] = f + ": " + n
				}
			}
		}
	}
	if len(out) < 30 {
		t.Fatalf("found %d reason constants: the walk no longer finds them", len(out))
	}
	return out
}

// The status table holds every reason the server answers (its reason
// constants and every sku.Outcome a route answers) and nothing else; and
// docs/api.md's Errors table names each error reason of the table once,
// in the row of its status.
func TestStatusTable(t *testing.T) {
	reasons := reasonConstants(t)
	for o := sku.Outcome(0); o < 255; o++ {
		if name := o.String(); !strings.HasPrefix(name, "Outcome(") && !notAnswered[name] {
			reasons[name] = "sku.Outcome"
		}
	}
	for r, from := range reasons {
		if _, ok := statuses[r]; !ok {
			t.Errorf("%s (%s) has no status in the table", r, from)
		}
	}
	for r := range statuses {
		if _, ok := reasons[r]; !ok {
			t.Errorf("the table's %s is no reason of the server", r)
		}
	}

	doc, err := os.ReadFile(filepath.Join("..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	errorsSection := string(doc[strings.Index(string(doc), "\n## Errors\n"):])
	errorsSection = errorsSection[:strings.Index(errorsSection[1:], "\n## ")+1]
	row := regexp.MustCompile(`(?m)^\| (\d{3}) \|(.*)\|$`)
	name := regexp.MustCompile("`([A-Z][A-Z_]*[A-Z])`")
	documented := map[string]int{}
	for _, m := range row.FindAllStringSubmatch(errorsSection, -1) {
		status, _ := strconv.Atoi(m[1])
		for _, n := range name.FindAllStringSubmatch(m[2], -1) {
			r := n[1]
			if at, twice := documented[r]; twice {
				t.Errorf("docs/api.md, Errors: %s is in the rows of %d and %d", r, at, status)
			}
			documented[r] = status
			if s, ok := statuses[r]; !ok {
				t.Errorf("docs/api.md, Errors: %s (row %d) is not in the status table", r, status)
			} else if s != status {
				t.Errorf("docs/api.md, Errors: %s is in the row of %d, the table answers %d", r, status, s)
			}
		}
	}
	for r, s := range statuses {
		if _, ok := documented[r]; s >= 400 && !ok {
			t.Errorf("%s (%d) is not in docs/api.md's Errors table", r, s)
		}
	}
	if len(documented) < 40 {
		t.Fatalf("read %d reasons from docs/api.md's Errors table: the walk no longer reads it", len(documented))
	}
}

// Every 503 of the table tells when to try again: its error answer
// carries Retry-After, whoever builds it (errorReply), and so does every
// engine error an admin or buyer route maps to 503 (engineError, the one
// mapping of the routes that answer an engine's error).
func TestEvery503CarriesRetryAfter(t *testing.T) {
	for reason, status := range statuses {
		if status != fasthttp.StatusServiceUnavailable {
			continue
		}
		if s, err := strconv.Atoi(errorReply(reason, "").retryAfter); err != nil || s < 1 {
			t.Errorf("503 %s: Retry-After %q, want whole seconds", reason, errorReply(reason, "").retryAfter)
		}
		// The answers with a body of their own (/readyz's) say it too.
		if r := reasonReply(reason, healthBody{Status: "draining"}); r.retryAfter != errorReply(reason, "").retryAfter {
			t.Errorf("503 %s with a body of its own: Retry-After %q", reason, r.retryAfter)
		}
	}
	s := &Server{log: slog.New(slog.DiscardHandler)}
	for _, err := range []error{actors.ErrUnavailable, fmt.Errorf("%w: a/b: recovering", actors.ErrUnavailable), actors.ErrClosed} {
		r := s.engineError("admin_pause", err, "")
		if r.status != fasthttp.StatusServiceUnavailable || r.retryAfter != "1" {
			t.Errorf("engineError(%v): status %d, Retry-After %q, want 503 and 1", err, r.status, r.retryAfter)
		}
	}
}
