package sku

import "unsafe"

// arenaBlockShift sets the arena's largest block: 1 MiB. A block is filled
// and never moves or changes, so strings may point into it.
const arenaBlockShift = 20
const arenaBlockSize = 1 << arenaBlockShift

// arenaFirstBlock is the first block's size; each next block is twice the
// last, up to arenaBlockSize: a SKU with few reservations (most SKUs, every
// state a recovery or a check rebuilds in the simulator) holds kilobytes,
// not a megabyte, and a large one soon fills 1 MiB blocks.
const arenaFirstBlock = 4 << 10

// arena holds the request_id and user_id bytes of every reservation, packed
// in append-only blocks that hold no pointer (the garbage collector does
// not scan them). A position is block<<20 | offset. A frozen copy shares the
// blocks: bytes past its length are invisible to it.
type arena struct {
	blocks [][]byte
}

// add copies a and b, side by side, and returns their position. Each is at
// most MaxIDLength bytes, so a pair never straddles two blocks.
func (a *arena) add(x, y string) uint64 {
	n := len(x) + len(y)
	last := len(a.blocks) - 1
	if last < 0 || len(a.blocks[last])+n > cap(a.blocks[last]) {
		size := arenaFirstBlock
		if last >= 0 {
			size = min(2*cap(a.blocks[last]), arenaBlockSize)
		}
		a.blocks = append(a.blocks, make([]byte, 0, size))
		last++
	}
	b := &a.blocks[last]
	pos := uint64(last)<<arenaBlockShift | uint64(len(*b))
	*b = append(*b, x...)
	*b = append(*b, y...)
	return pos
}

// str returns n bytes at pos+off as a string without copying: the bytes
// never change once written.
func (a *arena) str(pos uint64, off, n int) string {
	if n == 0 {
		return ""
	}
	b := a.blocks[pos>>arenaBlockShift]
	return unsafe.String(&b[int(pos&(arenaBlockSize-1))+off], n)
}

// freeze returns a read-only view of the bytes written so far.
func (a *arena) freeze() arena {
	return arena{blocks: append([][]byte(nil), a.blocks...)}
}
