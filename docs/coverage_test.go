package docs

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/seckill/seckill/actors/sku"
)

// Every route of httpapi/openapi.json (itself checked against the router
// by httpapi's TestOpenAPIDocumentsEveryRoute) is in docs/api.md's route
// tables as `METHOD path`, and every `METHOD /path` those tables name is in
// the document: a route added or removed without its doc fails here.
func TestDocsRoutes(t *testing.T) {
	t.Parallel()
	var spec struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal([]byte(readFile(t, "httpapi/openapi.json")), &spec); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for p, ops := range spec.Paths {
		for method := range ops {
			documented[strings.ToUpper(method)+" "+p] = true
		}
	}
	api := readFile(t, "docs/api.md")
	routes := api[strings.Index(api, "\n## Routes\n"):]
	routes = routes[:strings.Index(routes[1:], "\n## ")+1]
	for route := range documented {
		if !strings.Contains(routes, "`"+route+"`") {
			t.Errorf("docs/api.md, Routes: %s is served (httpapi/openapi.json) but not listed", route)
		}
	}
	named := regexp.MustCompile("`((?:GET|HEAD|POST|PUT|DELETE|PATCH) /[^`]*)`")
	for _, m := range named.FindAllStringSubmatch(routes, -1) {
		if !documented[m[1]] {
			t.Errorf("docs/api.md, Routes: %s is listed but not in httpapi/openapi.json", m[1])
		}
	}
}

var helpFlag = regexp.MustCompile(`(?m)^  --([a-z0-9-]+), SECKILL_`)

// Every flag of seckilld --help is in docs/operating.md's flags table, and
// every flag that table names is one seckilld has.
func TestDocsFlags(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(filepath.Join(binDir(t), "seckilld"), "--help").Output()
	if err != nil {
		t.Fatalf("seckilld --help: %v", err)
	}
	flags := map[string]bool{}
	for _, m := range helpFlag.FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if len(flags) < 10 {
		t.Fatalf("seckilld --help lists %d flags:\n%s", len(flags), out)
	}
	doc := readFile(t, "docs/operating.md")
	table := doc[strings.Index(doc, "\n## Flags\n"):]
	table = table[:strings.Index(table[1:], "\n## ")+1]
	for f := range flags {
		if !strings.Contains(table, "`--"+f+"`") && !strings.Contains(table, "`--"+f+" ") {
			t.Errorf("docs/operating.md, Flags: --%s (seckilld --help) is not in the table", f)
		}
	}
	for _, m := range regexp.MustCompile("`--([a-z0-9-]+)").FindAllStringSubmatch(table, -1) {
		if !flags[m[1]] {
			t.Errorf("docs/operating.md, Flags: --%s is not a flag of seckilld --help", m[1])
		}
	}
}

var reasonConst = regexp.MustCompile(`(?m)^\s*(?:const\s+)?[Rr]eason\w*\s*=\s*"([A-Z][A-Z_]*[A-Z])"`)

// Every machine-readable reason the server answers (httpapi's reason
// constants, and every sku.Outcome) appears in the docs, so a new error
// cannot ship undocumented.
func TestDocsReasons(t *testing.T) {
	t.Parallel()
	var all strings.Builder
	for _, f := range markdownFiles(t) {
		all.WriteString(readFile(t, f))
	}
	docs := all.String()
	reasons := map[string]string{}
	for _, dir := range []string{"httpapi", "cells"} {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range reasonConst.FindAllStringSubmatch(string(b), -1) {
				reasons[m[1]] = f
			}
		}
	}
	if len(reasons) < 20 {
		t.Fatalf("found %d reason constants in httpapi and cells: the pattern no longer matches the code", len(reasons))
	}
	for o := sku.Outcome(1); o < 255; o++ {
		if name := o.String(); !strings.HasPrefix(name, "Outcome(") {
			reasons[name] = "sku.Outcome"
		}
	}
	for reason, from := range reasons {
		if !regexp.MustCompile(`\b` + reason + `\b`).MatchString(docs) {
			t.Errorf("%s (%s) appears in no document", reason, from)
		}
	}
}

var stateSectionConst = regexp.MustCompile(`(?m)^const (stateSection\w+|lottery\w*Tag) = (\d+)$`)

// docs/formats.md lists every record type and every outcome with its
// number, and every trailing section of the state with its tag.
func TestDocsFormatsListEveryRecordType(t *testing.T) {
	t.Parallel()
	doc := readFile(t, "docs/formats.md")
	for typ := sku.RecordType(1); typ < 255; typ++ {
		name := typ.String()
		if strings.HasPrefix(name, "RecordType(") {
			continue
		}
		if row := "| " + strconv.Itoa(int(typ)) + " | `" + name + "` |"; !strings.Contains(doc, row) {
			t.Errorf("docs/formats.md lists no record type %d %s (a row %q)", typ, name, row)
		}
	}
	for o := sku.Outcome(1); o < 255; o++ {
		name := o.String()
		if strings.HasPrefix(name, "Outcome(") {
			continue
		}
		if row := "| " + strconv.Itoa(int(o)) + " | `" + name + "` |"; !strings.Contains(doc, row) {
			t.Errorf("docs/formats.md lists no outcome %d %s (a row %q)", o, name, row)
		}
	}
	sections := doc[strings.Index(doc, "**Trailing sections**"):]
	sections = sections[strings.Index(sections, "| tag |"):]
	sections = sections[:strings.Index(sections, "\n\n")]
	files, err := filepath.Glob(filepath.Join(root, "actors", "sku", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	tags := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range stateSectionConst.FindAllStringSubmatch(string(b), -1) {
			tags++
			if !strings.Contains(sections, "\n| "+m[2]+" | ") {
				t.Errorf("docs/formats.md's trailing sections have no tag %s (%s in %s)", m[2], m[1], filepath.Base(f))
			}
		}
	}
	if tags < 6 {
		t.Errorf("found %d state section tags in actors/sku: the pattern no longer matches the code", tags)
	}
}

// history is what a comment or a document must not cite: the project's
// issue numbers, the design document's sections, session history. Commit
// messages keep history; a comment says why in terms the repository shows.
var history = regexp.MustCompile(`(?i)\bissue\s*#\s*\d+|\bseed\s*§|§\s*\d|\(issue\s+\d+|fresh user's`)

// testHistory is history for a test's comments, which may cite an RFC's
// sections (§) as the behaviour they check.
var testHistory = regexp.MustCompile(`(?i)\bissue\s*#\s*\d+|\bseed\s*§|\(issue\s+\d+|fresh user's`)

// No comment of a Go file, no string of a non-test Go file, no Makefile
// comment, no description of httpapi/openapi.json and no document cites
// an issue number, a section of the design document or session history.
func TestDocsNoHistory(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != root || d.Name() == "testdata" || d.Name() == "etcdserver") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		isTest, cites := strings.HasSuffix(p, "_test.go"), history
		if isTest {
			cites = testHistory
		}
		for _, group := range f.Comments {
			for _, c := range group.List {
				if loc := cites.FindStringIndex(c.Text); loc != nil {
					t.Errorf("%s: a comment cites history: %q", fset.Position(c.Pos()), c.Text[loc[0]:loc[1]])
				}
			}
		}
		if isTest {
			return nil // a test's strings may hold what it looks for (this file's patterns)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if loc := history.FindStringIndex(lit.Value); loc != nil {
					t.Errorf("%s: a string cites history: %q", fset.Position(lit.Pos()), lit.Value[loc[0]:loc[1]])
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	texts := append(markdownFiles(t), "wal/README.md", "bench/README.md", "Makefile", "httpapi/openapi.json")
	sort.Strings(texts)
	for _, rel := range texts {
		for n, line := range strings.Split(readFile(t, rel), "\n") {
			if loc := history.FindStringIndex(line); loc != nil {
				t.Errorf("%s:%d cites history: %q", rel, n+1, line[loc[0]:loc[1]])
			}
		}
	}
}
