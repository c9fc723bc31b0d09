package sku

// TokenState is the state of one unit of stock.
type TokenState uint8

// Token states.
const (
	TokenAvailable TokenState = iota
	TokenReserved             // bound to one reservation (PENDING_PAYMENT, or CLOSED without release_on_close)
	TokenConfirmed            // bound to a PAID reservation: sold
)

func (s TokenState) String() string {
	return [...]string{"AVAILABLE", "RESERVED", "CONFIRMED"}[s]
}

// confirmedBit marks a token slot whose holder has paid.
const confirmedBit = 1 << 31

// tokenPool holds sale_limit tokens with stable ids 1..sale_limit (the token
// mode of the design, not a bare counter). A token is AVAILABLE, RESERVED by
// exactly one reservation, or CONFIRMED. available, reserved and confirmed are
// kept in step with the slots.
//
// Tokens are handed out in a deterministic order: released tokens first, in
// the order they were released (FIFO), then never-used tokens in ascending
// id order. Slots are kept only for tokens ever handed out, so a huge
// sale_limit costs nothing until it is sold.
type tokenPool struct {
	saleLimit uint32
	// slots[id-1] is 0 for an available token, else the holder's
	// reservation seq, with confirmedBit once paid. len(slots) = fresh-1.
	slots []uint32
	// released is a FIFO of token ids that were handed out and came back.
	released     []uint32
	releasedHead int
	reserved     uint32
	confirmed    uint32

	// celled: the pool sells only the granted tokens queued in unsold (and
	// released ones), not 1..saleLimit; slots then has holes for tokens the
	// cell never owned (grants.go).
	celled bool
	unsold rangeQueue
}

func (p *tokenPool) fresh() uint32 { return uint32(len(p.slots)) + 1 }

func (p *tokenPool) available() uint32 {
	if p.celled {
		return p.unsold.units + uint32(len(p.released)-p.releasedHead)
	}
	return p.saleLimit - uint32(len(p.slots)) + uint32(len(p.released)-p.releasedHead)
}

// next returns the token the next take will bind, or 0 if none is available.
func (p *tokenPool) next() uint32 {
	if p.releasedHead < len(p.released) {
		return p.released[p.releasedHead]
	}
	if p.celled {
		return p.unsold.first()
	}
	if uint32(len(p.slots)) < p.saleLimit {
		return p.fresh()
	}
	return 0
}

// take binds token (which must be next()) to the reservation seq.
func (p *tokenPool) take(token, seq uint32) {
	if p.releasedHead < len(p.released) {
		p.releasedHead++
		if p.releasedHead == len(p.released) {
			p.released, p.releasedHead = p.released[:0], 0
		} else if p.releasedHead > 1024 && p.releasedHead*2 > len(p.released) {
			n := copy(p.released, p.released[p.releasedHead:])
			p.released, p.releasedHead = p.released[:n], 0
		}
	} else if p.celled {
		p.unsold.pop()
		for uint32(len(p.slots)) < token {
			p.slots = append(p.slots, 0)
		}
	} else {
		p.slots = append(p.slots, 0)
	}
	p.slots[token-1] = seq
	p.reserved++
}

// release returns a RESERVED token to the pool.
func (p *tokenPool) release(token uint32) {
	p.slots[token-1] = 0
	p.released = append(p.released, token)
	p.reserved--
}

// dropReleased removes the released tokens that lie in the sorted ranges
// rs from the FIFO, keeping the order of the others (a RETURN).
func (p *tokenPool) dropReleased(rs []TokenRange) {
	kept := p.released[:0]
	for _, t := range p.released[p.releasedHead:] {
		if !inRanges(rs, t) {
			kept = append(kept, t)
		}
	}
	p.released, p.releasedHead = kept, 0
}

// confirm moves a RESERVED token to CONFIRMED.
func (p *tokenPool) confirm(token uint32) {
	p.slots[token-1] |= confirmedBit
	p.reserved--
	p.confirmed++
}

// state returns the token's state and holder (0 when available).
func (p *tokenPool) state(token uint32) (TokenState, uint32) {
	if token == 0 || token > p.saleLimit {
		return TokenAvailable, 0
	}
	if token > uint32(len(p.slots)) {
		return TokenAvailable, 0
	}
	s := p.slots[token-1]
	switch {
	case s == 0:
		return TokenAvailable, 0
	case s&confirmedBit != 0:
		return TokenConfirmed, s &^ confirmedBit
	}
	return TokenReserved, s
}
