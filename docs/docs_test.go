// Package docs holds the tests of the documentation: README.md and the
// files of this folder. The shell blocks marked runnable run against a real
// seckilld, links and anchors must resolve, the routes, flags, reasons and
// record types the code has must be documented, and the generated
// reference (docs/reference/) must be what the code prints now. The
// folder has no Go code of its own.
package docs

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/seckill/seckill/internal/testbin"
)

// root is the repository's root, seen from this package's folder.
const root = ".."

// updateDocs, set in the environment, makes the reference tests write what
// the code prints instead of comparing (make docs).
var updateDocs = os.Getenv("SECKILL_UPDATE_DOCS") != ""

// markdownFiles returns the documents the tests read: README.md and every
// .md file under docs/ (the generated reference too), paths relative to
// the repository's root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func readFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// block is one fenced code block of a document.
type block struct {
	file  string
	line  int    // 1-based line of its opening fence
	info  string // the fence's info string: "sh runnable", "json output", ...
	text  string // its content, lines joined with "\n", a final "\n"
	flags string // the seckilld flags of the last docs-test comment before it
}

func (b block) has(word string) bool {
	for _, f := range strings.Fields(b.info) {
		if f == word {
			return true
		}
	}
	return false
}

var docsTestComment = regexp.MustCompile(`^<!-- docs-test seckilld: (.*) -->$`)

// blocks returns the fenced blocks of the document text, in order. A fence
// is a line of three or more backticks; the block ends at a line of at
// least as many.
func blocks(file, text string) []block {
	var out []block
	var cur *block
	var fence, flags string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if cur == nil {
			if m := docsTestComment.FindStringSubmatch(trimmed); m != nil {
				flags = m[1]
				continue
			}
			if strings.HasPrefix(trimmed, "```") {
				fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]
				cur = &block{file: file, line: n, info: strings.TrimSpace(trimmed[len(fence):]), flags: flags}
			}
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, "`") == "" {
			out = append(out, *cur)
			cur = nil
			continue
		}
		cur.text += line + "\n"
	}
	return out
}

// outsideCode returns text with its fenced blocks and inline code spans
// blanked out (lines kept), for the tests that read prose: links, names.
func outsideCode(text string) string {
	var b strings.Builder
	inFence := false
	fence := ""
	for _, line := range strings.SplitAfter(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !inFence && strings.HasPrefix(trimmed, "```"):
			inFence, fence = true, trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]
			b.WriteString("\n")
		case inFence && strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, "`") == "":
			inFence = false
			b.WriteString("\n")
		case inFence:
			b.WriteString("\n")
		default:
			b.WriteString(inlineCode.ReplaceAllString(line, "``"))
		}
	}
	return b.String()
}

var inlineCode = regexp.MustCompile("`[^`]*`")

// binDir returns the folder of the project's commands (every main package
// under cmd/), built once for all the tests (testbin), with -race when the
// tests run with it (its packages are then compiled already), failing the
// test when they do not build.
func binDir(t *testing.T) string {
	t.Helper()
	return testbin.Dir(t, testbin.Race(), "github.com/seckill/seckill/cmd/...")
}

func TestMain(m *testing.M) { testbin.Main(m) }
