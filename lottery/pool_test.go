package lottery

import (
	"errors"
	"strings"
	"testing"
)

func TestPoolRoundTrip(t *testing.T) {
	var entries []Entry
	var text []byte
	for i := uint32(1); i <= 300; i++ {
		e := Entry{Seq: i, Pseudonym: Pseudonym(Hash{9}, "user"+string(rune('a'+i%26))), Tier: uint8(i * 7)}
		entries = append(entries, e)
		text = AppendLine(text, e)
	}
	got, err := ParsePool(text)
	if err != nil {
		t.Fatal(err)
	}
	if EntriesRoot(got) != EntriesRoot(entries) || len(got) != len(entries) {
		t.Fatal("parsed pool differs")
	}
	if r := EntriesRoot(nil); r != Commit(Hash{}) && r == (Hash{}) {
		t.Fatal("empty root is zero")
	}
}

func TestParsePoolRefusesNonCanonical(t *testing.T) {
	line := string(AppendLine(nil, Entry{Seq: 1, Pseudonym: Hash{0xab}, Tier: 2}))
	bad := map[string]string{
		"no newline":      strings.TrimSuffix(line, "\n"),
		"leading zero":    "0" + line,
		"upper hex":       strings.Replace(line, "ab", "AB", 1),
		"seq 2 first":     strings.Replace(line, "1,", "2,", 1),
		"tier 256":        strings.Replace(line, ",2\n", ",256\n", 1),
		"tier leading 0":  strings.Replace(line, ",2\n", ",02\n", 1),
		"crlf":            strings.Replace(line, "\n", "\r\n", 1),
		"four fields":     strings.Replace(line, "\n", ",1\n", 1),
		"short pseudonym": strings.Replace(line, "ab", "a", 1),
		"repeated seq":    line + line,
		"plus sign":       "+" + line,
	}
	for name, text := range bad {
		if _, err := ParsePool([]byte(text)); !errors.Is(err, ErrBadPool) {
			t.Errorf("%s: %v, want ErrBadPool", name, err)
		}
	}
	if got, err := ParsePool(nil); err != nil || len(got) != 0 {
		t.Fatalf("empty pool: %v %v", got, err)
	}
}

func TestBeaconRounds(t *testing.T) {
	b := Beacon{Source: SourceDrandQuicknet, Round: 1}
	if ms, err := b.TimeMs(); err != nil || ms != QuicknetGenesis*1000 {
		t.Fatalf("round 1: %d %v", ms, err)
	}
	b.Round = 1001
	if ms, _ := b.TimeMs(); ms != (QuicknetGenesis+3000)*1000 {
		t.Fatalf("round 1001: %d", ms)
	}
	if b.Accepts(1001) != nil || b.Accepts(1001+FallbackRounds) != nil || !errors.Is(b.Accepts(1002), ErrWrongRound) {
		t.Fatal("Accepts")
	}
	if _, err := (Beacon{Source: "nist", Round: 1}).TimeMs(); !errors.Is(err, ErrUnknownSource) {
		t.Fatal(err)
	}
	if _, err := (Beacon{Source: SourceDrandQuicknet}).TimeMs(); !errors.Is(err, ErrBadRound) {
		t.Fatal(err)
	}
}
