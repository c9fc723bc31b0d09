package compare

import (
	"bytes"
	"strings"
	"testing"
)

func TestWriteGoalsJudgesRatiosOfTheRun(t *testing.T) {
	hot := func(target string, concurrency int, rps float64) Row {
		return Row{Target: target, Scenario: scenarioHot, Concurrency: concurrency, ThroughputRPS: rps}
	}
	rows := []Row{
		hot("redis", 64, 40_000), hot("redis", 1024, 50_000),
		hot("seckilld", 64, 90_000), hot("seckilld", 16, 10),
		hot("null-http", 64, 200_000), hot("null-fsync", 64, 100_000),
		hot("engine", 64, 100_000), hot("engine", 4096, 800_000),
		{Target: "engine", Scenario: scenarioHot, Concurrency: 8192, Skipped: "not run", ThroughputRPS: 9e9},
		{Target: "engine", Scenario: scenarioSeed, Concurrency: 64, ThroughputRPS: 9e9},
	}
	var out bytes.Buffer
	WriteGoals(&out, rows)
	text := out.String()
	for _, want := range []string{
		"seckilld vs Redis + Lua (appendfsync always), hot c=64",
		"2.25x (90000 at c=64 / 40000 at c=64), goal >= 2x: met",
		"0.45x (90000 at c=64 / 200000 at c=64), goal >= 0.7x: NOT met",
		"16.00x (800000 at c=4096 / 50000 at c=1024), goal >= 15x: met",
		"durable ceiling (null-fsync) vs Redis + Lua, hot c=64",
		"2.50x (100000 at c=64 / 40000 at c=64)\n",
		"0.90x (90000 at c=64 / 100000 at c=64)\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
	if strings.Contains(text, "PostgreSQL") {
		t.Errorf("a goal without its figures is printed:\n%s", text)
	}
	out.Reset()
	WriteGoals(&out, nil)
	if out.Len() != 0 {
		t.Errorf("goals printed for an empty run: %q", out.String())
	}
	out.Reset()
	WriteGoals(&out, []Row{hot("seckilld", 16, 20_000), hot("null-http", 16, 90_000)})
	if text := out.String(); !strings.Contains(text, "no speed goal or ceiling judged") || strings.Contains(text, "==") {
		t.Errorf("a run without c=64 does not say why no goal is judged:\n%s", text)
	}
}
