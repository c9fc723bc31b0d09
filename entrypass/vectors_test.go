package entrypass

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json from the generator (go test -run TestVectors -update)")

const vectorsPath = "testdata/vectors.json"

// vectorFile is testdata/vectors.json: the test vectors a gateway in
// another language checks its minting and verifying against.
type vectorFile struct {
	Comment          []string        `json:"comment"`
	Version          int             `json:"version"`
	DomainHex        string          `json:"domain_hex"`
	SubjectDomainHex string          `json:"subject_domain_hex"`
	LeewayMs         int64           `json:"leeway_ms"`
	KeyRing          string          `json:"key_ring"`
	SubjectSecretHex string          `json:"subject_secret_hex"`
	SubjectKeys      []subjectVector `json:"subject_keys"`
	Valid            []validVector   `json:"valid"`
	Invalid          []invalidVector `json:"invalid"`
}

type subjectVector struct {
	Kind   string `json:"kind"`
	Value  string `json:"value"`
	KeyHex string `json:"key_hex"`
}

type claimsJSON struct {
	CampaignID  string            `json:"campaign_id"`
	SKUID       string            `json:"sku_id"`
	UserID      string            `json:"user_id"`
	Tier        uint8             `json:"tier"`
	Risk        uint8             `json:"risk"`
	Subjects    map[string]string `json:"subjects"` // kind -> 16 hex digits; absent kinds omitted
	NotBeforeMs int64             `json:"not_before_ms"`
	ExpiresAtMs int64             `json:"expires_at_ms"`
}

type validVector struct {
	Name       string     `json:"name"`
	KeyID      uint8      `json:"key_id"`
	Claims     claimsJSON `json:"claims"`
	NonceHex   string     `json:"nonce_hex"`
	PayloadHex string     `json:"payload_hex"`
	MACHex     string     `json:"mac_hex"`
	Pass       string     `json:"pass"`
	RequestID  string     `json:"request_id"`
	VerifyAtMs []int64    `json:"verify_at_ms"` // Verify accepts the pass at each of these times
}

type invalidVector struct {
	Name        string `json:"name"`
	Pass        string `json:"pass"`
	CampaignID  string `json:"campaign_id"`
	SKUID       string `json:"sku_id"`
	UserID      string `json:"user_id"`
	NowMs       int64  `json:"now_ms"`
	Error       string `json:"error"`                   // Reason's label
	ExpiresAtMs int64  `json:"expires_at_ms,omitempty"` // for "expired": the when of the answer
}

func toJSON(c Claims) claimsJSON {
	j := claimsJSON{CampaignID: c.CampaignID, SKUID: c.SKUID, UserID: c.UserID, Tier: c.Tier, Risk: c.Risk,
		Subjects: map[string]string{}, NotBeforeMs: c.NotBeforeMs, ExpiresAtMs: c.ExpiresAtMs}
	for k := SubjectKind(0); k < SubjectKindCount; k++ {
		if key, ok := c.Subjects.Get(k); ok {
			j.Subjects[k.String()] = hex.EncodeToString(key[:])
		}
	}
	return j
}

func fromJSON(t *testing.T, j claimsJSON) Claims {
	t.Helper()
	c := Claims{CampaignID: j.CampaignID, SKUID: j.SKUID, UserID: j.UserID, Tier: j.Tier, Risk: j.Risk,
		NotBeforeMs: j.NotBeforeMs, ExpiresAtMs: j.ExpiresAtMs}
	for name, h := range j.Subjects {
		kind, ok := ParseSubjectKind(name)
		b, err := hex.DecodeString(h)
		if !ok || err != nil || len(b) != SubjectKeySize {
			t.Fatalf("subject %q: %q", name, h)
		}
		c.Subjects.Set(kind, SubjectKey(b))
	}
	return c
}

// Vector keys: the ring "2:…,1:…" of secret2 and secret1 (key 2 signs; key
// 1 is the old key of a rotation) and a subject secret.
var subjectSecret = testSecret("seckill entry pass test subject secret")

func vectorRing(t testing.TB) *KeyRing {
	return mustRing(t, mustKey(t, 2, secret2), mustKey(t, 1, secret1))
}

// generateVectors builds the vector file. It is deterministic: fixed keys,
// fixed nonces, fixed times.
func generateVectors(t *testing.T) vectorFile {
	ring := vectorRing(t)
	k2, k1 := ring.keys[0], ring.keys[1]
	hasher, err := NewSubjectHasher(subjectSecret)
	if err != nil {
		t.Fatal(err)
	}
	v := vectorFile{
		Comment: []string{
			"Test vectors for seckill entry passes, layout version 1; the layout is the doc of package entrypass.",
			"key_ring uses the --entry-pass-keys form (kid:hex, the first signs). A minter checks that each valid",
			"pass is the base64url (no padding) of payload_hex followed by mac_hex, and that subject_keys hash as given.",
			"A verifier accepts each valid pass at every verify_at_ms (with claims equal to its claims) and refuses",
			"each invalid pass with the class in error. Regenerate: go test ./entrypass -run TestVectors -update",
		},
		Version:          Version,
		DomainHex:        hex.EncodeToString([]byte(Domain)),
		SubjectDomainHex: hex.EncodeToString([]byte(SubjectDomain)),
		LeewayMs:         LeewayMs,
		KeyRing:          "2:" + hex.EncodeToString(secret2) + ",1:" + hex.EncodeToString(secret1),
		SubjectSecretHex: hex.EncodeToString(subjectSecret),
	}
	subjectValues := []struct {
		kind  SubjectKind
		value string
	}{
		{SubjectDevice, "device:7f3c2a9e"},
		{SubjectPaymentAccount, "card:4111111111111111"},
		{SubjectAddress, "上海市浦东新区世纪大道100号"},
		{SubjectNetwork, "203.0.113.0/24"},
		{SubjectNetwork, "2001:db8:1234::/48"},
		{SubjectDevice, ""},
	}
	for _, s := range subjectValues {
		key := hasher.Hash(s.kind, s.value)
		v.SubjectKeys = append(v.SubjectKeys, subjectVector{s.kind.String(), s.value, hex.EncodeToString(key[:])})
	}
	nonce := func(seed byte) Nonce {
		var n Nonce
		for i := range n {
			n[i] = seed + byte(i)*17
		}
		return n
	}
	addValid := func(name string, k *Key, c Claims, n Nonce, at ...int64) {
		text := mustEncode(t, k, c, n)
		raw, _ := encoding.DecodeString(text)
		at = append(at, c.NotBeforeMs-LeewayMs, c.ExpiresAtMs+LeewayMs-1)
		v.Valid = append(v.Valid, validVector{
			Name: name, KeyID: k.id, Claims: toJSON(c), NonceHex: hex.EncodeToString(n[:]),
			PayloadHex: hex.EncodeToString(raw[:len(raw)-MACSize]), MACHex: hex.EncodeToString(raw[len(raw)-MACSize:]),
			Pass: text, RequestID: RequestID(n), VerifyAtMs: at,
		})
	}

	typical := testClaims()
	typical.Subjects = Subjects{}
	typical.Subjects.Set(SubjectDevice, hasher.Hash(SubjectDevice, "device:7f3c2a9e"))
	typical.Subjects.Set(SubjectNetwork, hasher.Hash(SubjectNetwork, "203.0.113.0/24"))
	addValid("typical: device and network keys, tier 2, high risk", k2, typical, testNonce, testNow)
	addValid("shortest: 1-character ids, no subject key, a 1 ms window", k2, minimalClaims(), nonce(1), testNow)
	addValid("longest: 64-character ids, all four subject keys", k2, longestClaims(), nonce(2), testNow)
	alphabet := Claims{CampaignID: "Camp-2026.12:01_x", SKUID: "SKU_9.a-Z:0", UserID: "user:0.9_Z-a",
		Tier: 255, Risk: 255, NotBeforeMs: testNow, ExpiresAtMs: testNow + 600_000}
	alphabet.Subjects.Set(SubjectPaymentAccount, hasher.Hash(SubjectPaymentAccount, "card:4111111111111111"))
	alphabet.Subjects.Set(SubjectAddress, hasher.Hash(SubjectAddress, "上海市浦东新区世纪大道100号"))
	addValid("signed by the old key 1 during a rotation; every id character class; tier and risk 255", k1, alphabet, nonce(3), testNow+1)
	addValid("not_before 0, the longest lifetime", k2, Claims{CampaignID: "c", SKUID: "s", UserID: "u", NotBeforeMs: 0, ExpiresAtMs: MaxLifetimeMs}, nonce(4), 0)
	addValid("the widest window ending at 2^53-1", k2, Claims{CampaignID: "c", SKUID: "s", UserID: "u", NotBeforeMs: MaxTimeMs - MaxLifetimeMs, ExpiresAtMs: MaxTimeMs}, nonce(5), MaxTimeMs)

	typicalText := v.Valid[0].Pass
	typicalRaw, _ := encoding.DecodeString(typicalText)
	typicalPayload := typicalRaw[:len(typicalRaw)-MACSize]
	addInvalid := func(name, text string, want Scope, now int64, err error) {
		iv := invalidVector{Name: name, Pass: text, CampaignID: want.CampaignID, SKUID: want.SKUID, UserID: want.UserID, NowMs: now, Error: Reason(err)}
		if errors.Is(err, ErrExpired) {
			iv.ExpiresAtMs = typical.ExpiresAtMs
		}
		v.Invalid = append(v.Invalid, iv)
	}
	at := func(name string, text string, err error) { addInvalid(name, text, testScope, testNow, err) }
	// edit returns the typical payload changed by f, sealed with key 2.
	edit := func(f func(b []byte) []byte) string { return seal(k2, f(bytes.Clone(typicalPayload))) }
	// offsets in the typical payload: version, kid, "c1", "s1", "alice", tier, risk, flags, 2 keys, times, nonce.
	const userAt, flagsAt, timesAt = 2 + 3 + 3, 2 + 3 + 3 + 6 + 2, 2 + 3 + 3 + 6 + 3 + 16
	putTimes := func(nbf, exp uint64) func([]byte) []byte {
		return func(b []byte) []byte {
			binary.BigEndian.PutUint64(b[timesAt:], nbf)
			binary.BigEndian.PutUint64(b[timesAt+8:], exp)
			return b
		}
	}
	if len(typicalText)%4 == 0 || typicalPayload[userAt] != 5 || typicalPayload[flagsAt] != 0x09 {
		t.Fatal("the typical pass's layout is not what the invalid vectors assume")
	}

	at("empty", "", ErrMalformed)
	at("99 characters: one short of the shortest pass", v.Valid[1].Pass[:MinTextLength-1], ErrMalformed)
	at("396 characters: one over the longest pass", v.Valid[2].Pass+"A", ErrMalformed)
	at("base64 padding added", typicalText+"==", ErrMalformed)
	at("a line break inside", typicalText[:40]+"\n"+typicalText[40:], ErrMalformed)
	at("a '+' of standard base64", typicalText[:20]+"+"+typicalText[21:], ErrMalformed)
	last := strings.IndexByte(alphabetURL, typicalText[len(typicalText)-1])
	at("non-zero unused bits in the last character", typicalText[:len(typicalText)-1]+string(alphabetURL[last^1]), ErrMalformed)
	at("version 0", edit(func(b []byte) []byte { b[0] = 0; return b }), ErrMalformed)
	at("version 2", edit(func(b []byte) []byte { b[0] = 2; return b }), ErrMalformed)
	at("key id 9, not in the ring", edit(func(b []byte) []byte { b[1] = 9; return b }), ErrUnknownKey)
	flipped := bytes.Clone(typicalRaw)
	flipped[len(flipped)-1] ^= 1
	at("last MAC bit flipped", encoding.EncodeToString(flipped), ErrBadMAC)
	changed := bytes.Clone(typicalRaw)
	changed[userAt+5] = 'f'
	at("user_id changed after signing (alice to alicf)", encoding.EncodeToString(changed), ErrBadMAC)
	addInvalid("user_id changed after signing, verified as alicf", encoding.EncodeToString(changed), Scope{"c1", "s1", "alicf"}, testNow, ErrBadMAC)
	m := hmac.New(sha256.New, secret2)
	m.Write(typicalPayload)
	at("MAC without the domain prefix", encoding.EncodeToString(m.Sum(bytes.Clone(typicalPayload))), ErrBadMAC)
	at("signed with another secret under key id 2", mustEncode(t, mustKey(t, 2, secret1), typical, testNonce), ErrBadMAC)
	at("campaign length 0", edit(func(b []byte) []byte { return append([]byte{b[0], b[1], 0}, b[2:]...) }), ErrMalformed)
	at("user length 65", edit(func(b []byte) []byte {
		b[userAt] = 65
		return append(b[:userAt+1], append(bytes.Repeat([]byte{'a'}, 65), b[userAt+6:]...)...)
	}), ErrMalformed)
	at("user length past the end", edit(func(b []byte) []byte { b[userAt] = 250; return b }), ErrMalformed)
	at("subject flag bit 4 set", edit(func(b []byte) []byte { b[flagsAt] |= 0x10; return b }), ErrMalformed)
	at("subject flag for a missing key", edit(func(b []byte) []byte { b[flagsAt] |= 0x02; return b }), ErrMalformed)
	at("one byte after the nonce", edit(func(b []byte) []byte { return append(b, 0) }), ErrMalformed)
	at("one nonce byte missing", edit(func(b []byte) []byte { return b[:len(b)-1] }), ErrMalformed)
	at("not_before equal to expires_at", edit(putTimes(uint64(testNow), uint64(testNow))), ErrMalformed)
	at("a lifetime 1 ms over a day", edit(putTimes(uint64(testNow), uint64(testNow+MaxLifetimeMs+1))), ErrMalformed)
	at("expires_at past 2^53-1", edit(putTimes(MaxTimeMs-1000, MaxTimeMs+1)), ErrMalformed)
	at("negative not_before", edit(putTimes(1<<63, uint64(testNow))), ErrMalformed)
	addInvalid("another campaign", typicalText, Scope{"c2", "s1", "alice"}, testNow, ErrWrongScope)
	addInvalid("another SKU", typicalText, Scope{"c1", "s2", "alice"}, testNow, ErrWrongScope)
	addInvalid("alice's pass sent as bob", typicalText, Scope{"c1", "s1", "bob"}, testNow, ErrWrongUser)
	addInvalid("user id in another case", typicalText, Scope{"c1", "s1", "Alice"}, testNow, ErrWrongUser)
	addInvalid("another user and expired: the user is checked first", typicalText, Scope{"c1", "s1", "bob"}, typical.ExpiresAtMs+LeewayMs, ErrWrongUser)
	addInvalid("another campaign and a bad MAC: the MAC is checked first", encoding.EncodeToString(flipped), Scope{"c2", "s1", "alice"}, testNow, ErrBadMAC)
	addInvalid("1 ms before not_before less the leeway", typicalText, testScope, typical.NotBeforeMs-LeewayMs-1, ErrNotYetValid)
	addInvalid("at expires_at plus the leeway", typicalText, testScope, typical.ExpiresAtMs+LeewayMs, ErrExpired)
	return v
}

// alphabetURL is base64url's alphabet in value order.
const alphabetURL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func marshalVectors(t *testing.T, v vectorFile) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestVectors checks testdata/vectors.json against this package, and that
// the generator still writes exactly that file (-update rewrites it).
func TestVectors(t *testing.T) {
	generated := marshalVectors(t, generateVectors(t))
	if *update {
		if err := os.WriteFile(vectorsPath, generated, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stored, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stored, generated) {
		t.Fatalf("%s differs from the generator's output: run go test ./entrypass -run TestVectors -update and review the diff", vectorsPath)
	}
	var v vectorFile
	if err := json.Unmarshal(stored, &v); err != nil {
		t.Fatal(err)
	}
	checkVectors(t, v)
}

// checkVectors checks a vector file against the package, independently of
// the generator.
func checkVectors(t *testing.T, v vectorFile) {
	if v.Version != Version || v.DomainHex != hex.EncodeToString([]byte(Domain)) ||
		v.SubjectDomainHex != hex.EncodeToString([]byte(SubjectDomain)) || v.LeewayMs != LeewayMs {
		t.Fatal("the vectors' constants differ from the package's")
	}
	ring, err := ParseKeyRing(v.KeyRing)
	if err != nil {
		t.Fatal(err)
	}
	secret, _ := hex.DecodeString(v.SubjectSecretHex)
	hasher, err := NewSubjectHasher(secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range v.SubjectKeys {
		kind, ok := ParseSubjectKind(s.Kind)
		key := hasher.Hash(kind, s.Value)
		if !ok || hex.EncodeToString(key[:]) != s.KeyHex {
			t.Errorf("subject %s %q: key %x, want %s", s.Kind, s.Value, key, s.KeyHex)
		}
	}
	kinds := 0
	for _, tc := range v.Valid {
		c := fromJSON(t, tc.Claims)
		kinds |= int(c.Subjects.present)
		nonceBytes, _ := hex.DecodeString(tc.NonceHex)
		nonce := Nonce(nonceBytes)
		i := ring.find(tc.KeyID)
		if i < 0 {
			t.Fatalf("%s: key %d not in the ring", tc.Name, tc.KeyID)
		}
		text := mustEncode(t, ring.keys[i], c, nonce)
		if text != tc.Pass || encoding.EncodeToString(mustHex(t, tc.PayloadHex+tc.MACHex)) != tc.Pass {
			t.Errorf("%s: Encode = %s, want %s (payload ‖ mac)", tc.Name, text, tc.Pass)
		}
		if RequestID(nonce) != tc.RequestID {
			t.Errorf("%s: request_id %s, want %s", tc.Name, RequestID(nonce), tc.RequestID)
		}
		for _, now := range tc.VerifyAtMs {
			p, err := ring.Verify(tc.Pass, Scope{c.CampaignID, c.SKUID, c.UserID}, now)
			if err != nil || p != (Pass{Claims: c, KeyID: tc.KeyID, Nonce: nonce}) {
				t.Errorf("%s at %d: Verify = %+v, %v", tc.Name, now, p, err)
			}
		}
	}
	if kinds != 1<<SubjectKindCount-1 {
		t.Errorf("the valid vectors use subject flags %#x, want every kind", kinds)
	}
	seen := map[string]bool{}
	for _, tc := range v.Invalid {
		_, err := ring.Verify(tc.Pass, Scope{tc.CampaignID, tc.SKUID, tc.UserID}, tc.NowMs)
		seen[Reason(err)] = true
		if Reason(err) != tc.Error {
			t.Errorf("%s: Verify error %v (%s), want %s", tc.Name, err, Reason(err), tc.Error)
		}
		var te *TimeError
		if tc.Error == "expired" && (!errors.As(err, &te) || te.ExpiresAtMs != tc.ExpiresAtMs) {
			t.Errorf("%s: %v does not say when the pass expired (%d)", tc.Name, err, tc.ExpiresAtMs)
		}
	}
	for _, r := range reasons {
		if !seen[r.label] {
			t.Errorf("no invalid vector of class %s", r.label)
		}
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
