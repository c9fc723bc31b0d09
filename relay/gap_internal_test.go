package relay

import (
	"errors"
	"testing"
)

// A SKU the cursor holds no position of starts at record 1; a new history
// of a SKU that has a position continues it (a restore's fork), and so may
// one of a SKU not known yet; anything else is a gap. With the types
// relayed chosen, nothing is.
func TestStartChecker(t *testing.T) {
	gap := func(err error) bool { return errors.Is(err, ErrCompacted) }
	c := newStartChecker(nil)
	if err := c.check(map[string]string{}, "s", "aaaa-1", 1); err != nil {
		t.Fatalf("a SKU's definition: %v", err)
	}
	if err := c.check(map[string]string{}, "s", "aaaa-7", 7); !gap(err) {
		t.Fatalf("a SKU first met at record 7: %v", err)
	}
	if err := c.check(map[string]string{"aaaa": "aaaa-5"}, "s", "aaaa-7", 7); err != nil {
		t.Fatalf("a history the cursor holds: %v", err)
	}
	if err := c.check(map[string]string{"cccc": "cccc-6"}, "s", "bbbb-7", 7); err != nil {
		t.Fatalf("a fork after a position of a history not met yet: %v", err)
	}
	c.owner["aaaa"] = "s"
	if err := c.check(map[string]string{"aaaa": "aaaa-4"}, "s", "bbbb-7", 7); err != nil {
		t.Fatalf("a fork after the SKU's position (records 5 and 6 left out by the types): %v", err)
	}
	c.owner["dddd"] = "other"
	if err := c.check(map[string]string{"dddd": "dddd-6"}, "s", "eeee-7", 7); !gap(err) {
		t.Fatalf("another SKU's position at the record before: %v", err)
	}
	if err := newStartChecker([]string{"seckill.reservation.paid"}).check(map[string]string{}, "s", "aaaa-7", 7); err != nil {
		t.Fatalf("types chosen: %v", err)
	}
	if err := newStartChecker([]string{"seckill.sku.defined", "seckill.reservation.paid"}).check(map[string]string{}, "s", "aaaa-7", 7); err != nil {
		t.Fatalf("types chosen (the SKU's first record may be none of them): %v", err)
	}
}
