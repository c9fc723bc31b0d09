package docs

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// Every relative link of the documents (README.md, docs/, and the package
// notes they link to) points to a file or folder that exists, and every
// #anchor to a heading of its file.
func TestDocsLinks(t *testing.T) {
	t.Parallel()
	files := append(markdownFiles(t), "wal/README.md", "bench/README.md")
	anchors := map[string]map[string]bool{}
	anchorsOf := func(rel string) map[string]bool {
		if a, ok := anchors[rel]; ok {
			return a
		}
		a := headingAnchors(readFile(t, rel))
		anchors[rel] = a
		return a
	}
	for _, file := range files {
		text := outsideCode(readFile(t, file))
		for n, line := range strings.Split(text, "\n") {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				where := file + ":" + strconv.Itoa(n+1)
				ref, anchor, _ := strings.Cut(target, "#")
				dest := file
				if ref != "" {
					dest = path.Join(path.Dir(file), ref)
					if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
						t.Errorf("%s: link %q: %s does not exist", where, target, dest)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s: link %q: an anchor into %s, which is not a document", where, target, dest)
					continue
				}
				if !anchorsOf(dest)[anchor] {
					t.Errorf("%s: link %q: %s has no heading #%s", where, target, dest, anchor)
				}
			}
		}
	}
}

// headingAnchors returns the anchors GitHub gives the headings of a
// document: lower case, punctuation dropped, spaces as "-", a repeated
// anchor numbered -1, -2, ...
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(outsideCodeKeepInline(text), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if k := seen[a]; k > 0 {
			out[a+"-"+strconv.Itoa(k)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// outsideCodeKeepInline blanks fenced blocks only: a heading's inline code
// is part of its anchor.
func outsideCodeKeepInline(text string) string {
	var b strings.Builder
	inFence := false
	for _, line := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			b.WriteString("\n")
			continue
		}
		if inFence {
			b.WriteString("\n")
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}
