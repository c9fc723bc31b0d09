package entrypass

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

const referencePath = "reference/entrypass.py"

// python3 returns the interpreter's path. The reference check must run in
// CI, so a missing python3 fails the test rather than skipping it.
func python3(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is not on PATH: the reference implementation (%s) is checked by CI, so install python3 (the CI image must have it): %v", referencePath, err)
	}
	return path
}

// TestReferenceVectors runs the Python reference implementation over the
// test vectors.
func TestReferenceVectors(t *testing.T) {
	out, err := exec.Command(python3(t), referencePath, vectorsPath).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", referencePath, vectorsPath, err, out)
	}
	if !bytes.Contains(out, []byte(" 0 failures")) {
		t.Fatalf("unexpected output:\n%s", out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
}

// TestReferenceAgreesWithGo is a differential test: random claims minted by
// both implementations give the same text, and random passes, damaged or
// checked against other scopes and times, get the same answer from both.
func TestReferenceAgreesWithGo(t *testing.T) {
	const cases = 400
	rng := rand.New(rand.NewPCG(14, 2026))
	k1, k2 := mustKey(t, 1, secret1), mustKey(t, 200, secret2)
	ring := mustRing(t, k2, k1)
	ringText := "200:" + hex.EncodeToString(secret2) + ",1:" + hex.EncodeToString(secret1)
	var requests bytes.Buffer
	enc := json.NewEncoder(&requests)
	type verifyCase struct {
		text string
		want Scope
		now  int64
	}
	var texts []string
	var checks []verifyCase
	for range cases {
		c := randomClaims(rng)
		k := []*Key{k1, k2}[rng.IntN(2)]
		var nonce Nonce
		for i := range nonce {
			nonce[i] = byte(rng.Uint32())
		}
		text := mustEncode(t, k, c, nonce)
		texts = append(texts, text)
		enc.Encode(map[string]any{"op": "mint", "key_id": k.id, "secret_hex": hex.EncodeToString(k.secret),
			"claims": toJSON(c), "nonce_hex": hex.EncodeToString(nonce[:])})
		check := verifyCase{text, Scope{c.CampaignID, c.SKUID, c.UserID}, c.NotBeforeMs + rng.Int64N(c.ExpiresAtMs-c.NotBeforeMs)}
		switch rng.IntN(8) {
		case 0: // as minted
		case 1: // a flipped bit of the text, kept ASCII so JSON carries it unchanged
			b := []byte(text)
			b[rng.IntN(len(b))] ^= 1 << rng.IntN(7)
			check.text = string(b)
		case 2: // a cut
			check.text = text[:rng.IntN(len(text))]
		case 3: // a byte of the payload changed and sealed again: the parser behind the MAC
			raw, _ := encoding.DecodeString(text)
			payload := raw[:len(raw)-MACSize]
			payload[2+rng.IntN(len(payload)-2)] = byte(rng.Uint32())
			check.text = seal(k, payload)
		case 4:
			check.want.SKUID += "x"
		case 5:
			check.want.UserID = strings.ToUpper(check.want.UserID) + "_"
		case 6:
			check.now = c.NotBeforeMs - LeewayMs - rng.Int64N(2)
		case 7:
			check.now = c.ExpiresAtMs + LeewayMs - rng.Int64N(2)
		}
		checks = append(checks, check)
		enc.Encode(map[string]any{"op": "verify", "key_ring": ringText, "pass": check.text,
			"campaign_id": check.want.CampaignID, "sku_id": check.want.SKUID, "user_id": check.want.UserID, "now_ms": check.now})
	}

	cmd := exec.Command(python3(t), referencePath, "--batch")
	cmd.Stdin = &requests
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s --batch: %v\n%s", referencePath, err, stderr.String())
	}
	answers := bufio.NewScanner(bytes.NewReader(out))
	next := func() map[string]any {
		if !answers.Scan() {
			t.Fatalf("the reference answered fewer than %d lines", 2*cases)
		}
		var a map[string]any
		if err := json.Unmarshal(answers.Bytes(), &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	classes := map[string]int{}
	for i := range cases {
		if got := next()["pass"]; got != texts[i] {
			t.Fatalf("case %d: the reference minted %v, Go %s", i, got, texts[i])
		}
		c := checks[i]
		p, err := ring.Verify(c.text, c.want, c.now)
		a := next()
		reason, _ := a["error"].(string)
		classes[Reason(err)]++
		if reason != Reason(err) {
			t.Fatalf("case %d: the reference says %q, Go %q (%v) for %q", i, reason, Reason(err), err, c.text)
		}
		if err == nil && (a["nonce_hex"] != hex.EncodeToString(p.Nonce[:]) || a["key_id"] != float64(p.KeyID) ||
			!reflect.DeepEqual(a["claims"], jsonValue(t, toJSON(p.Claims)))) {
			t.Fatalf("case %d: the reference read %v, Go %+v", i, a, p)
		}
	}
	t.Logf("answers by class: %v", classes)
	for _, r := range reasons {
		if classes[r.label] == 0 && r.label != "unknown_key" {
			t.Errorf("no differential case of class %s", r.label)
		}
	}
}

// jsonValue returns v as encoding/json decodes it into an any.
func jsonValue(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// randomClaims draws valid claims: ids of 1-64 characters of the whole id
// alphabet, any tier and risk, any subset of subject keys, any window.
func randomClaims(rng *rand.Rand) Claims {
	const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-"
	id := func() string {
		b := make([]byte, 1+rng.IntN(MaxIDLength))
		for i := range b {
			b[i] = idAlphabet[rng.IntN(len(idAlphabet))]
		}
		if s := string(b); s != "." && s != ".." {
			return s
		}
		return "x"
	}
	c := Claims{CampaignID: id(), SKUID: id(), UserID: id(), Tier: uint8(rng.Uint32()), Risk: uint8(rng.Uint32())}
	for k := SubjectKind(0); k < SubjectKindCount; k++ {
		if rng.IntN(2) == 0 {
			var key SubjectKey
			for i := range key {
				key[i] = byte(rng.Uint32())
			}
			c.Subjects.Set(k, key)
		}
	}
	c.NotBeforeMs = rng.Int64N(MaxTimeMs - MaxLifetimeMs)
	c.ExpiresAtMs = c.NotBeforeMs + 1 + rng.Int64N(MaxLifetimeMs)
	return c
}
