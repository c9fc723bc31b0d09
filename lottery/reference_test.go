package lottery

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

const referencePath = "reference/lottery.py"

// python3 returns the interpreter's path. The reference check runs in CI
// (.ci/run installs python3), so a missing python3 fails the test.
func python3(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is not on PATH: the reference implementation (%s) is checked by CI, so install python3: %v", referencePath, err)
	}
	return path
}

func runReference(t *testing.T, vectors string) {
	t.Helper()
	out, err := exec.Command(python3(t), referencePath, vectors).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", referencePath, vectors, err, out)
	}
	if !bytes.Contains(out, []byte(" 0 failures")) {
		t.Fatalf("unexpected output:\n%s", out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
}

// TestReferenceVectors runs the Python reference over the golden vectors.
func TestReferenceVectors(t *testing.T) { runReference(t, vectorsPath) }

// TestReferenceLineCount keeps the reference short enough to read in the
// docs: under 40 lines.
func TestReferenceLineCount(t *testing.T) {
	b, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n >= 40 {
		t.Fatalf("%s has %d lines, want < 40", referencePath, n)
	}
}

// TestReferenceAgreesWithGo is a differential test: 200 random draws (pool
// sizes, tiers, quotas, ids) computed by Go are recomputed by the reference.
func TestReferenceAgreesWithGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 2026))
	hash := func() string {
		var b [Size]byte
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return hex.EncodeToString(b[:])
	}
	var f vectorFile
	for i := range 200 {
		v := vector{Name: fmt.Sprintf("random %d", i), CampaignID: fmt.Sprintf("c%d", rng.IntN(1000)), SKUID: fmt.Sprintf("s-%d", rng.IntN(1000)),
			ServerSeed: hash(), PseudonymKey: hash(), Randomness: hash(), Units: uint32(rng.IntN(30)), Waitlist: uint32(rng.IntN(30))}
		n := rng.IntN(60)
		v.Entries = []vectorEntry{}
		for s := 1; s <= n; s++ {
			v.Entries = append(v.Entries, vectorEntry{Seq: uint32(s), UserID: fmt.Sprintf("u%d", rng.Uint32()), Tier: uint8(rng.IntN(4))})
		}
		perm := rng.Perm(4)
		for k := range rng.IntN(4) {
			v.Tiers = append(v.Tiers, jsonQuota{Tier: uint8(perm[k]), Quota: float64(1 + rng.IntN(10))})
		}
		if rng.IntN(2) == 0 {
			v.Tiers = append(v.Tiers, jsonQuota{Tier: uint8(perm[3]), Quota: "rest"})
		}
		v.Expect = v.compute(t)
		f.Vectors = append(f.Vectors, v)
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "random.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	runReference(t, path)
}
