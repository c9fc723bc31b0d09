// Command instructions is make bench-instructions: the instructions one
// request costs on each path of the cheap layer and on the two null
// servers, counted by valgrind --tool=callgrind, in one table.
//
// It builds httpapi's test binary and runs each sub-benchmark of
// BenchmarkInstructions (httpapi/instructions_bench_test.go) in a process
// of its own under callgrind, GOMAXPROCS 1, with the benchmark's timed
// loop between the markers (--zero-before=*callgrindLoopStart
// --dump-before=*callgrindLoopEnd): the set-up and the testing package's
// first round of one iteration are left out. A row is the instructions
// of the loop's dump divided by its iterations and by the items each
// serves (items/op: a batch's items, a feed page's events). Every round
// runs every path once; two rounds (the default) show how far a count
// moves from run to run.
//
//	go run ./bench/instructions [-rounds 2] [-requests 2000] [-out DIR]
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/internal/version"
)

// paths are BenchmarkInstructions' sub-benchmarks, in the table's order,
// with the share of -requests each runs (a batch of 64 and a page of 100
// events are each many items).
var paths = []struct {
	name    string
	divisor int
}{
	{"null-http", 1},
	{"null-fsync", 1},
	{"hot-reserve", 1},
	{"sold-out", 1},
	{"batch-item", 20},
	{"feed-event", 20},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("instructions", flag.ContinueOnError)
	flags.SetOutput(stderr)
	if version.HelpRequested(args) {
		flags.SetOutput(stdout) // the usage asked for is the answer
	}
	rounds := flags.Int("rounds", 2, "times each path runs (each in a process of its own)")
	requests := flags.Int("requests", 2000, "iterations of a single-request path (a batch or feed path runs 1/20 of them)")
	out := flags.String("out", "", "directory for the test binary and callgrind's files (default: a temporary one, removed)")
	pkg := flags.String("pkg", "./httpapi/", "the package of BenchmarkInstructions")
	only := flags.String("paths", "", "comma-separated paths to measure, in the table's order (default: all of "+pathNames()+")")
	gogc := flags.String("gogc", "off", "GOGC of the measured processes: off leaves the collector out (its share moves with timing by tens of percent on the batch path); allocations per item show what each item asks of it")
	if err := flags.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	if *rounds < 1 || *requests < 20 {
		fmt.Fprintln(stderr, "instructions: -rounds must be >= 1 and -requests >= 20")
		return 2
	}
	chosen, err := choosePaths(*only)
	if err != nil {
		fmt.Fprintln(stderr, "instructions:", err)
		return 2
	}
	dir := *out
	if dir == "" {
		tmp, err := os.MkdirTemp("", "seckill-instructions-")
		if err != nil {
			fmt.Fprintln(stderr, "instructions:", err)
			return 1
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	t, err := measure(dir, *pkg, *gogc, chosen, *rounds, *requests, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "instructions:", err)
		return 1
	}
	t.print(stdout)
	return 0
}

// row is one path's instructions per item, one count per round.
type row struct {
	name   string
	iters  int
	items  int
	allocs float64 // heap allocations per item (the benchmark's allocs/op, last round)
	counts []float64
}

type table struct {
	rows                   []row
	commit, valgrind, gogc string
	when                   time.Time
	// loadBefore and loadAfter are the one-minute load averages when the
	// measuring began and ended (bench.LoadAverage): the runtime's share
	// of a request's count moves with the machine's load.
	loadBefore, loadAfter float64
}

// pathNames lists the paths, comma-separated.
func pathNames() string {
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = p.name
	}
	return strings.Join(names, ",")
}

// choosePaths returns the paths named in list (comma-separated), in the
// table's order; all of them for an empty list.
func choosePaths(list string) ([]int, error) {
	named := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			named[n] = true
		}
	}
	all := len(named) == 0
	var chosen []int
	for i, p := range paths {
		if all || named[p.name] {
			chosen = append(chosen, i)
			delete(named, p.name)
		}
	}
	for n := range named {
		return nil, fmt.Errorf("-paths: no path %q (the paths: %s)", n, pathNames())
	}
	return chosen, nil
}

func measure(dir, pkg, gogc string, chosen []int, rounds, requests int, progress io.Writer) (*table, error) {
	bin, err := filepath.Abs(filepath.Join(dir, "httpapi.test"))
	if err != nil {
		return nil, err
	}
	build := exec.Command("go", "test", "-c", "-o", bin, pkg)
	build.Stdout, build.Stderr = progress, progress
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("go test -c %s: %w", pkg, err)
	}
	version, err := exec.Command("valgrind", "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("valgrind (apt-get install valgrind): %w", err)
	}
	t := &table{valgrind: strings.TrimSpace(string(version)), commit: commit(), when: time.Now().UTC(), gogc: gogc,
		loadBefore: bench.LoadAverage()}
	for _, i := range chosen {
		p := paths[i]
		t.rows = append(t.rows, row{name: p.name, iters: max(requests/p.divisor, 2)}) // 1 would be the testing package's first round alone
	}
	for r := 1; r <= rounds; r++ {
		for i := range t.rows {
			row := &t.rows[i]
			fmt.Fprintf(progress, "round %d: %s, %d iterations under callgrind\n", r, row.name, row.iters)
			ir, items, allocs, err := callgrind(dir, bin, gogc, row.name, row.iters, r)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", row.name, err)
			}
			row.items, row.allocs = items, float64(allocs)/float64(items)
			row.counts = append(row.counts, float64(ir)/float64(row.iters*items))
		}
	}
	t.loadAfter = bench.LoadAverage()
	return t, nil
}

// callgrind runs one path under callgrind and returns the instructions of
// its timed loop and the items per iteration it reported.
func callgrind(dir, bin, gogc, name string, iters, round int) (ir uint64, items, allocs int, err error) {
	outFile, err := filepath.Abs(filepath.Join(dir, fmt.Sprintf("%s.%d.out", name, round)))
	if err != nil {
		return 0, 0, 0, err
	}
	cmd := exec.Command("valgrind", "--tool=callgrind", "--callgrind-out-file="+outFile,
		"--zero-before=*callgrindLoopStart", "--dump-before=*callgrindLoopEnd",
		bin, "-test.run", "^$", "-test.bench", "^BenchmarkInstructions$/^"+name+"$",
		"-test.benchtime", strconv.Itoa(iters)+"x", "-test.cpu", "1")
	// Callgrind cannot follow Go's asynchronous preemption signals, and
	// valgrind 3.19 does not decode RDTSCP, which the runtime's cputicks
	// uses where the CPU reports it (a SIGILL on such machines).
	cmd.Env = append(os.Environ(), "GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off", "GOGC="+gogc)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		// A crash names its cause at the start of stderr (after
		// valgrind's banner) and where it was at the end.
		return 0, 0, 0, fmt.Errorf("%w\n%s%s\n...\n%s", err, stdout.Bytes(), head(stderr.Bytes(), 3000), tail(stderr.Bytes(), 1500))
	}
	n, items, allocs, err := parseBenchLine(stdout.Bytes(), name)
	if err != nil {
		return 0, 0, 0, err
	}
	if n != iters {
		return 0, 0, 0, fmt.Errorf("the benchmark ran %d iterations, want %d", n, iters)
	}
	dumps, err := filepath.Glob(outFile + ".*")
	if err != nil {
		return 0, 0, 0, err
	}
	last, lastPart := "", 0
	for _, d := range dumps {
		if part, err := strconv.Atoi(d[len(outFile)+1:]); err == nil && part > lastPart {
			last, lastPart = d, part
		}
	}
	// Dumps 1 and 2: the testing package's round of one iteration, then
	// the round of iters.
	if lastPart != 2 {
		return 0, 0, 0, fmt.Errorf("%d loop dumps from callgrind in %s, want 2", lastPart, dir)
	}
	f, err := os.Open(last)
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	ir, err = parseTotals(f)
	return ir, items, allocs, err
}

// parseTotals returns the instructions of a callgrind dump: its "totals:"
// line, the sum of the costs it holds, which --zero-before zeroed. (Its
// "summary:" line counts from the dump before, the next round's set-up
// included.) The first event is Ir when only instructions are collected.
func parseTotals(r io.Reader) (uint64, error) {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var totals string
	for s.Scan() {
		line := s.Text()
		if after, ok := strings.CutPrefix(line, "events:"); ok && (len(strings.Fields(after)) == 0 || strings.Fields(after)[0] != "Ir") {
			return 0, fmt.Errorf("callgrind's events are %q, not Ir first", after)
		}
		if after, ok := strings.CutPrefix(line, "totals:"); ok {
			totals = after
		}
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	fields := strings.Fields(totals)
	if len(fields) == 0 {
		return 0, errors.New("no totals line in callgrind's dump")
	}
	return strconv.ParseUint(fields[0], 10, 64)
}

var benchLine = regexp.MustCompile(`(?m)^BenchmarkInstructions/(\S+?)(?:-\d+)?\s+(\d+)\s.*?([\d.]+) items/op.*?(\d+) allocs/op`)

// parseBenchLine returns the iterations, the items/op and the allocs/op of
// the benchmark line of path name in go test's output.
func parseBenchLine(out []byte, name string) (iters, items, allocs int, err error) {
	for _, m := range benchLine.FindAllSubmatch(out, -1) {
		if string(m[1]) != name {
			continue
		}
		iters, err = strconv.Atoi(string(m[2]))
		if err != nil {
			return 0, 0, 0, err
		}
		f, err := strconv.ParseFloat(string(m[3]), 64)
		if err != nil || f < 1 {
			return 0, 0, 0, fmt.Errorf("items/op %q", m[3])
		}
		if allocs, err = strconv.Atoi(string(m[4])); err != nil {
			return 0, 0, 0, err
		}
		return iters, int(f), allocs, nil
	}
	return 0, 0, 0, fmt.Errorf("no benchmark line for %s in:\n%s", name, tail(out, 2000))
}

func (t *table) print(w io.Writer) {
	fmt.Fprintf(w, "Instructions per item (callgrind Ir, GOMAXPROCS 1, GOGC %s), %s, commit %s, %s, %s, load average %.1f before, %.1f after\n\n",
		t.gogc, t.when.Format("2006-01-02"), t.commit, runtime.Version(), t.valgrind, t.loadBefore, t.loadAfter)
	fmt.Fprint(w, "| path | iterations × items | instructions per item, each round | spread | × null-http | × null-fsync | allocations per item |\n|---|---|---|---|---|---|---|\n")
	base := map[string]float64{}
	for _, r := range t.rows {
		base[r.name] = r.counts[0]
	}
	for _, r := range t.rows {
		counts := make([]string, len(r.counts))
		lo, hi := r.counts[0], r.counts[0]
		for i, c := range r.counts {
			counts[i] = group(c)
			lo, hi = min(lo, c), max(hi, c)
		}
		fmt.Fprintf(w, "| %s | %d × %d | %s | %.1f%% | %s | %s | %.1f |\n", r.name, r.iters, r.items,
			strings.Join(counts, " / "), 100*(hi-lo)/lo, ratio(r.counts[0], base["null-http"]), ratio(r.counts[0], base["null-fsync"]), r.allocs)
	}
}

// ratio formats n/base, or "-" when the base path was not measured.
func ratio(n, base float64) string {
	if base == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", n/base)
}

// group formats n rounded with thousands separators.
func group(n float64) string {
	s := strconv.FormatInt(int64(n+0.5), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "-"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += " (modified)"
	}
	return c
}

func head(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
