package sku

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/seckill/seckill/lottery"
)

// LotteryFields are the fields of the lottery records (record types
// RecordLotteryCommitted..RecordDrawDone and RecordLotteryEnded; see lottery.go). A Record of
// another type has none (Record.Lot is nil).
type LotteryFields struct {
	Count        uint32       // ENTRIES_CLOSED: the entries; DRAW_DONE: the draw's winners; LOTTERY_ENDED: the entries that lose by it
	Root         lottery.Hash // ENTRIES_CLOSED: entries_root; DRAW_DONE: winners_root
	WaitlistRoot lottery.Hash // DRAW_DONE: waitlist_root
	Round        uint64       // DRAW_STARTED: the beacon round used
	Randomness   lottery.Hash // DRAW_STARTED: its randomness
	Signature    []byte       // DRAW_STARTED: the beacon's signature of the round, when given (lottery.CheckSignature); nil otherwise
	EntrySeq     uint32       // WON: the entry the reservation is for
	FromWaitlist bool         // WON: a promotion from the waitlist, not a winner of the draw
	Seqs         []uint32     // WAITLISTED: entry seqs, in rank order
}

// MaxWaitlistChunk bounds the entry seqs one WAITLISTED record lists (at
// most 5 bytes each: ~80 KiB, far below the log's frame limit).
const MaxWaitlistChunk = 1 << 14

// isLottery reports whether t is a lottery record type.
func (t RecordType) isLottery() bool {
	return t >= RecordLotteryCommitted && t <= RecordDrawDone || t == RecordLotteryEnded
}

// appendLotteryPayload appends a lottery record's fields after At.
// Layouts (uvarint unless said; hash: 32 raw bytes; str: uvarint length
// and bytes):
//
//	LOTTERY_COMMITTED  varint entries_open_at, varint entries_close_at,
//	                   str beacon_source, round, waitlist, n_tiers,
//	                   n × (u8 tier, bool rest, count), hash server_seed,
//	                   hash pseudonym_key
//	ENTERED            entry_seq, u8 tier, str request_id, str user_id
//	                   [, u8 risk, u8 subject flags, 8 bytes per set flag]
//	ENTRIES_CLOSED     count, hash entries_root
//	DRAW_STARTED       round, hash randomness [, str signature]
//	WON                reservation seq, token, varint expire_at, entry_seq,
//	                   bool from_waitlist
//	WAITLISTED         n, n × entry_seq
//	DRAW_DONE          winners, hash winners_root, hash waitlist_root
//	LOTTERY_ENDED      count (the entries that could still win, who lose)
//
// DRAW_STARTED's signature is an optional trailing field, written only when
// the draw was given one: a draw without it is byte for byte what older
// versions wrote. So is ENTERED's pass group (Record.Holder after its tier:
// appendPassSubjects), written only when the entry pass carried a risk
// level or subject keys; an entry without it has its tier alone, as every
// entry older versions wrote.
func (r *Record) appendLotteryPayload(dst []byte) []byte {
	l := r.Lot
	if l == nil && r.Type != RecordLotteryCommitted {
		l = &LotteryFields{}
	}
	switch r.Type {
	case RecordLotteryCommitted:
		dst = appendRules(dst, r.Def.Lottery)
	case RecordEntered:
		dst = binary.AppendUvarint(dst, uint64(r.Seq))
		dst = append(dst, r.Holder.Tier)
		dst = appendString(dst, r.RequestID)
		dst = appendString(dst, r.UserID)
		if r.Holder.passSubjects() {
			dst = appendPassSubjects(dst, &r.Holder)
		}
	case RecordEntriesClosed:
		dst = binary.AppendUvarint(dst, uint64(l.Count))
		dst = append(dst, l.Root[:]...)
	case RecordDrawStarted:
		dst = binary.AppendUvarint(dst, l.Round)
		dst = append(dst, l.Randomness[:]...)
		if len(l.Signature) > 0 {
			dst = appendString(dst, string(l.Signature))
		}
	case RecordWon:
		dst = binary.AppendUvarint(dst, uint64(r.Seq))
		dst = binary.AppendUvarint(dst, uint64(r.Token))
		dst = binary.AppendVarint(dst, r.ExpireAt)
		dst = binary.AppendUvarint(dst, uint64(l.EntrySeq))
		dst = appendBool(dst, l.FromWaitlist)
	case RecordWaitlisted:
		dst = binary.AppendUvarint(dst, uint64(len(l.Seqs)))
		for _, s := range l.Seqs {
			dst = binary.AppendUvarint(dst, uint64(s))
		}
	case RecordDrawDone:
		dst = binary.AppendUvarint(dst, uint64(l.Count))
		dst = append(dst, l.Root[:]...)
		dst = append(dst, l.WaitlistRoot[:]...)
	case RecordLotteryEnded:
		dst = binary.AppendUvarint(dst, uint64(l.Count))
	}
	return dst
}

// decodeLottery reads a lottery record's fields after At into r.
func (d *decoder) decodeLottery(r *Record) {
	if r.Type == RecordLotteryCommitted {
		r.Def.Lottery = d.rules()
		return
	}
	l := &LotteryFields{}
	r.Lot = l
	switch r.Type {
	case RecordEntered:
		r.Seq = d.uint32()
		tier := d.byte()
		r.RequestID, r.UserID = d.stringPair()
		r.Holder.Tier = tier
		if d.err == nil && len(d.b) > 0 {
			if r.Holder = d.passSubjects(tier); d.err == nil && !r.Holder.passSubjects() {
				d.fail(errors.New("an entry's pass group with no risk and no subject key"))
			}
		}
	case RecordEntriesClosed:
		l.Count, l.Root = d.uint32(), d.hash()
	case RecordDrawStarted:
		l.Round, l.Randomness = d.uvarint(), d.hash()
		if d.err == nil && len(d.b) > 0 {
			// The encoder writes the group only for a signature: an empty
			// one is not canonical (it would decode again as none).
			if l.Signature = bytes.Clone(d.bytes()); d.err == nil && len(l.Signature) == 0 {
				d.fail(errors.New("an empty beacon signature"))
			}
		}
	case RecordWon:
		r.Seq, r.Token, r.ExpireAt = d.uint32(), d.uint32(), d.varint()
		l.EntrySeq, l.FromWaitlist = d.uint32(), d.bool()
	case RecordWaitlisted:
		n := d.uvarint()
		if n > MaxWaitlistChunk || n > uint64(len(d.b)) {
			d.fail(errors.New("waitlist chunk too long"))
			return
		}
		l.Seqs = make([]uint32, n)
		for i := range l.Seqs {
			l.Seqs[i] = d.uint32()
		}
	case RecordDrawDone:
		l.Count, l.Root, l.WaitlistRoot = d.uint32(), d.hash(), d.hash()
	case RecordLotteryEnded:
		l.Count = d.uint32()
	}
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) hash() (h lottery.Hash) {
	if d.err != nil {
		return h
	}
	if len(d.b) < len(h) {
		d.err = errShort
		return h
	}
	copy(h[:], d.b)
	d.b = d.b[len(h):]
	return h
}

// appendRules appends the layout of LOTTERY_COMMITTED's payload after At.
func appendRules(dst []byte, lr *LotteryRules) []byte {
	dst = binary.AppendVarint(dst, lr.EntriesOpenAt)
	dst = binary.AppendVarint(dst, lr.EntriesCloseAt)
	dst = appendString(dst, lr.Beacon.Source)
	dst = binary.AppendUvarint(dst, lr.Beacon.Round)
	dst = binary.AppendUvarint(dst, uint64(lr.Waitlist))
	dst = binary.AppendUvarint(dst, uint64(len(lr.Tiers)))
	for _, q := range lr.Tiers {
		dst = append(dst, q.Tier)
		dst = appendBool(dst, q.Rest)
		dst = binary.AppendUvarint(dst, uint64(q.Count))
	}
	dst = append(dst, lr.ServerSeed[:]...)
	return append(dst, lr.PseudonymKey[:]...)
}

// rules reads what appendRules wrote.
func (d *decoder) rules() *LotteryRules {
	lr := &LotteryRules{}
	lr.EntriesOpenAt, lr.EntriesCloseAt = d.varint(), d.varint()
	lr.Beacon.Source = string(d.bytes())
	lr.Beacon.Round = d.uvarint()
	lr.Waitlist = d.uint32()
	n := d.uvarint()
	if n > lottery.MaxTiers {
		d.fail(errors.New("too many tiers"))
		return lr
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		lr.Tiers = append(lr.Tiers, lottery.Quota{Tier: d.byte(), Rest: d.bool(), Count: d.uint32()})
	}
	lr.ServerSeed, lr.PseudonymKey = d.hash(), d.hash()
	return lr
}
