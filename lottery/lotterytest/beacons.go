// Package lotterytest gives tests the published drand beacons of
// lottery/testdata/beacons.json (the file says where each comes from), so
// the tests of several packages read one copy.
package lotterytest

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Beacon is one published round: its number and signature, and for the
// non-quicknet chain its group public key and published randomness (hex
// decoded; nil when the file gives none).
type Beacon struct {
	Round      uint64
	Signature  []byte
	PublicKey  []byte
	Randomness []byte
}

// Beacons are the vectors of beacons.json.
type Beacons struct {
	// Quicknet is a published round of drand quicknet.
	Quicknet Beacon
	// Walkthrough is a round of drand's test chain of the same scheme
	// (bls-unchained-g1-rfc9380), with its own public key and randomness.
	Walkthrough Beacon
}

// Load reads lottery/testdata/beacons.json, failing t if it cannot.
func Load(t testing.TB) Beacons {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "testdata", "beacons.json"))
	if err != nil {
		t.Fatal(err)
	}
	type beaconJSON struct {
		Round      uint64 `json:"round"`
		Signature  string `json:"signature"`
		PublicKey  string `json:"public_key"`
		Randomness string `json:"randomness"`
	}
	var doc struct {
		Quicknet    beaconJSON `json:"quicknet"`
		Walkthrough beaconJSON `json:"walkthrough"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	of := func(b beaconJSON) Beacon {
		out := Beacon{Round: b.Round}
		for _, f := range []struct {
			dst *[]byte
			hex string
		}{{&out.Signature, b.Signature}, {&out.PublicKey, b.PublicKey}, {&out.Randomness, b.Randomness}} {
			if f.hex == "" {
				continue
			}
			v, err := hex.DecodeString(f.hex)
			if err != nil {
				t.Fatal(err)
			}
			*f.dst = v
		}
		return out
	}
	return Beacons{Quicknet: of(doc.Quicknet), Walkthrough: of(doc.Walkthrough)}
}
