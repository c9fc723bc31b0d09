package docs

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
	"github.com/seckill/seckill/internal/metricsdoc"
)

// commands returns the binaries whose --help is docs/reference/<name>.txt:
// every command under cmd/ (a folder with a main.go), so a new one gets
// its reference without a change here.
func commands(t *testing.T) []string {
	t.Helper()
	mains, err := filepath.Glob(filepath.Join(root, "cmd", "*", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range mains {
		names = append(names, filepath.Base(filepath.Dir(m)))
	}
	if len(names) < 6 {
		t.Fatalf("found %d commands under cmd/: %v", len(names), names)
	}
	return names
}

// docs/reference/ is what the code prints now: each command's --help, and
// the metrics a seckilld with a SKU exports (the cell's own metrics are
// cmd/seckilld's TestDocsCellMetricsReference). SECKILL_UPDATE_DOCS=1
// (make docs) writes them instead.
func TestDocsReference(t *testing.T) {
	t.Parallel()
	bin := binDir(t)
	names := commands(t)
	txts, _ := filepath.Glob(filepath.Join(root, "docs", "reference", "*.txt"))
	for _, txt := range txts {
		if name := strings.TrimSuffix(filepath.Base(txt), ".txt"); !slices.Contains(names, name) {
			t.Errorf("docs/reference/%s.txt: there is no command %s under cmd/ any more: remove it", name, name)
		}
	}
	for _, name := range names {
		cmd := exec.Command(filepath.Join(bin, name), "--help")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()} // no SECKILL_* default leaks in
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s --help: %v\n%s", name, err, out)
			continue
		}
		checkReference(t, name+".txt", out)
	}

	d := seckilldtest.Start(t, filepath.Join(bin, "seckilld"), filepath.Join(t.TempDir(), "data"), nil)
	resp, err := http.Get(d.Base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	list := make([]*dto.MetricFamily, 0, len(families))
	for _, f := range families {
		list = append(list, f)
	}
	var b bytes.Buffer
	b.WriteString(`# Metrics

Every metric a seckilld serves on ` + "`GET /metrics`" + `, generated from a running server with the
demo SKU by ` + "`make docs`" + ` (do not edit; ` + "`TestDocsReference`" + ` fails when it is not
current). Per-SKU series carry ` + "`campaign_id`" + ` and ` + "`sku_id`" + `; no label carries a user
or request id. The Go runtime's and the process's collectors (` + "`go_*`" + `, ` + "`process_*`" + `)
are served too and not listed. A cell adds [its own](metrics-cell.md).

`)
	b.WriteString(metricsdoc.Table(list, "go_", "process_", "promhttp_"))
	checkReference(t, "metrics.md", b.Bytes())
}

// checkReference compares docs/reference/name with got, or writes it when
// updating.
func checkReference(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(root, "docs", "reference", name)
	if updateDocs {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("docs/reference/%s: %v (make docs writes it)", name, err)
		return
	}
	if !bytes.Equal(want, got) {
		t.Errorf("docs/reference/%s is not current: run make docs and commit it\n%s", name, firstDifference(string(want), string(got)))
	}
}

// firstDifference shows the first line where want and got differ.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\n  file: " + wl + "\n  code: " + gl
		}
	}
	return ""
}
