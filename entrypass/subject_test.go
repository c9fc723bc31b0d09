package entrypass

import (
	"bytes"
	"errors"
	"testing"

	"github.com/seckill/seckill/actors/sku"
)

func TestSubjects(t *testing.T) {
	var s Subjects
	if s.Count() != 0 {
		t.Fatal("the zero Subjects holds a key")
	}
	s.Set(SubjectAddress, SubjectKey{1})
	s.Set(SubjectAddress, SubjectKey{2})
	s.Set(SubjectDevice, SubjectKey{3})
	if got, ok := s.Get(SubjectAddress); !ok || got != (SubjectKey{2}) {
		t.Fatalf("Get(address) = %v, %v", got, ok)
	}
	if _, ok := s.Get(SubjectNetwork); ok {
		t.Fatal("Get(network) found a key never set")
	}
	if _, ok := s.Get(SubjectKindCount); ok {
		t.Fatal("Get of an out-of-range kind found a key")
	}
	if s.Count() != 2 {
		t.Fatalf("Count = %d, want 2", s.Count())
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Set of an out-of-range kind did not panic")
		}
	}()
	s.Set(SubjectKindCount, SubjectKey{})
}

func TestSubjectKindNames(t *testing.T) {
	for k := SubjectKind(0); k < SubjectKindCount; k++ {
		if got, ok := ParseSubjectKind(k.String()); !ok || got != k {
			t.Errorf("ParseSubjectKind(%q) = %v, %v", k.String(), got, ok)
		}
	}
	if _, ok := ParseSubjectKind("ip"); ok {
		t.Error("ParseSubjectKind accepted ip")
	}
	if got := SubjectKind(9).String(); got != "subject(9)" {
		t.Errorf("SubjectKind(9) = %q", got)
	}
}

func TestSubjectHasher(t *testing.T) {
	h1, err := NewSubjectHasher(secret1)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := NewSubjectHasher(secret2)
	if err != nil {
		t.Fatal(err)
	}
	a := h1.Hash(SubjectDevice, "phone-1")
	if a != h1.Hash(SubjectDevice, "phone-1") {
		t.Fatal("Hash is not deterministic")
	}
	for name, other := range map[string]SubjectKey{
		"another kind":   h1.Hash(SubjectNetwork, "phone-1"),
		"another value":  h1.Hash(SubjectDevice, "phone-2"),
		"another secret": h2.Hash(SubjectDevice, "phone-1"),
	} {
		if other == a {
			t.Errorf("%s gives the same key", name)
		}
	}
	if _, err := NewSubjectHasher(secret1[:31]); !errors.Is(err, ErrBadSecret) {
		t.Errorf("a 31-byte secret: %v", err)
	}
	if _, err := NewSubjectHasher(bytes.Repeat([]byte{1}, 65)); !errors.Is(err, ErrBadSecret) {
		t.Errorf("a 65-byte secret: %v", err)
	}
}

func TestRequestID(t *testing.T) {
	id := RequestID(testNonce)
	if len(id) != RequestIDLength || id[:len(RequestIDPrefix)] != RequestIDPrefix || !sku.ValidID(id) {
		t.Fatalf("RequestID = %q: want %d characters starting %q, valid under sku.ValidID", id, RequestIDLength, RequestIDPrefix)
	}
	if id != "ep.oKGio6SlpqeoqaqrrK2urw" {
		t.Fatalf("RequestID = %q, the layout's derivation changed", id)
	}
	all := Nonce{}
	for i := range all {
		all[i] = 0xff // all '_' in base64url
	}
	if other := RequestID(all); other == id || !sku.ValidID(other) {
		t.Fatalf("RequestID(ff...) = %q", other)
	}
	if (Pass{Nonce: testNonce}).RequestID() != id {
		t.Fatal("Pass.RequestID differs from RequestID(nonce)")
	}
}
