package relay

import (
	"context"
	"errors"
	"testing"
)

// A SKU the cursor holds no position of starts at record 1; a new history
// of a SKU that has a position continues it (a restore's fork), and so
// does one of a position the feed says is the SKU's (of the cursor the
// relay resumed from); anything else is a gap, a position of the resumed
// cursor that the feed says is another SKU's too. With the types relayed
// chosen, nothing is.
func TestStartChecker(t *testing.T) {
	ctx := context.Background()
	gap := func(err error) bool { return errors.Is(err, ErrCompacted) }
	owners := map[string]string{"cccc-6": "s", "ffff-6": "other"} // what the feed says of the resumed positions
	var asked []string
	owns := func(_ context.Context, skuID, position string) (bool, error) {
		asked = append(asked, position)
		if position == "9999-1" {
			return false, errors.New("feed unreachable")
		}
		return owners[position] == skuID, nil
	}
	c := newStartChecker(nil, owns)
	if err := c.check(ctx, map[string]string{}, "s", "aaaa-1", 1); err != nil {
		t.Fatalf("a SKU's definition: %v", err)
	}
	if err := c.check(ctx, map[string]string{}, "s", "aaaa-7", 7); !gap(err) {
		t.Fatalf("a SKU first met at record 7: %v", err)
	}
	if err := c.check(ctx, map[string]string{"aaaa": "aaaa-5"}, "s", "aaaa-7", 7); err != nil {
		t.Fatalf("a history the cursor holds: %v", err)
	}
	if err := c.check(ctx, map[string]string{"cccc": "cccc-6"}, "s", "bbbb-7", 7); err != nil || c.owner["cccc"] != "s" {
		t.Fatalf("a fork after a resumed position the feed says is the SKU's: %v, owner %q", err, c.owner["cccc"])
	}
	var gapErr *GapError
	if err := c.check(ctx, map[string]string{"ffff": "ffff-6"}, "t", "eeee-7", 7); !errors.As(err, &gapErr) || gapErr.SKUID != "t" || gapErr.FirstIndex != 7 {
		t.Fatalf("a SKU first met at record 7 beside a resumed position the feed says is another SKU's: %v", err)
	}
	c.owner["aaaa"] = "s"
	asked = nil
	if err := c.check(ctx, map[string]string{"aaaa": "aaaa-4"}, "s", "bbbb-7", 7); err != nil || len(asked) > 0 {
		t.Fatalf("a fork after the SKU's position (records 5 and 6 left out by the types): %v, asked the feed of %v", err, asked)
	}
	c.owner["dddd"] = "other"
	if err := c.check(ctx, map[string]string{"dddd": "dddd-6"}, "s", "eeee-7", 7); !gap(err) {
		t.Fatalf("another SKU's position at the record before: %v", err)
	}
	if err := c.check(ctx, map[string]string{"9999": "9999-1"}, "u", "8888-7", 7); err == nil || gap(err) {
		t.Fatalf("the feed could not tell: %v, want its error", err)
	}
	if err := newStartChecker([]string{"seckill.reservation.paid"}, owns).check(ctx, map[string]string{}, "s", "aaaa-7", 7); err != nil {
		t.Fatalf("types chosen: %v", err)
	}
	if err := newStartChecker([]string{"seckill.sku.defined", "seckill.reservation.paid"}, owns).check(ctx, map[string]string{}, "s", "aaaa-7", 7); err != nil {
		t.Fatalf("types chosen (the SKU's first record may be none of them): %v", err)
	}
}
