package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/internal/timefmt"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

func runInspect(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError("inspect: wal or snapshot?")
	}
	switch args[0] {
	case "wal":
		return inspectWAL(args[1:], stdout)
	case "snapshot":
		return inspectSnapshot(args[1:], stdout)
	}
	return usageError("inspect: unknown %q (wal or snapshot)", args[0])
}

// walJSON is what inspect wal prints: the SKU, its log as read, and the
// records selected, oldest first. The records are written one at a time
// (arrayStream).
type walJSON struct {
	CampaignID string       `json:"campaign_id"`
	SKUID      string       `json:"sku_id"`
	Log        logInfo      `json:"log"`
	Records    []recordJSON `json:"records"`
}

// recordJSON is one log record as inspect wal prints it: its index, type
// and time, then the data of the event the feed sends for it
// (feed.EventData: the same fields, names and renderer; the reservation's
// fields a later record's event takes from the reservation are those the
// record itself holds), then what the feed leaves out: an entry pass's
// subject keys, and a definition's and a lottery's rules beyond the
// event's. Definition and Lottery take the place of the event's (they hold
// its fields and more). Fields a record type does not have are left out.
type recordJSON struct {
	Index uint64 `json:"index"`
	Type  string `json:"type"`
	At    string `json:"at"`
	AtMs  int64  `json:"at_ms"`
	feed.EventData
	Definition *definitionJSON   `json:"definition,omitempty"` // DEFINE
	Lottery    *lotteryJSON      `json:"lottery,omitempty"`    // the lottery records, WON
	Subjects   map[string]string `json:"subjects,omitempty"`   // RESERVED, ENTERED with an entry pass
}

// recordOf renders the record at index of the SKU def (its campaign, SKU,
// cell and reservation id key name the reservations).
func recordOf(index uint64, r *sku.Record, def sku.Definition) recordJSON {
	var held sku.View // what a WON record holds of its reservation
	if r.Type == sku.RecordWon {
		held = sku.View{TokenID: r.Token, CreatedAt: r.At, ExpireAt: r.ExpireAt}
	}
	ev := feed.NewEvent(*r, index, "", def, sku.NewReservationIDs(def), held)
	j := recordJSON{Index: index, Type: r.Type.String(), At: timefmt.OptionalMillis(r.At), AtMs: r.At, EventData: ev.Data}
	if ev.Data.Lottery != nil {
		j.Lottery = &lotteryJSON{LotteryData: ev.Data.Lottery}
	}
	switch r.Type {
	case sku.RecordDefine:
		j.Definition = definitionOf(r.Def)
	case sku.RecordLotteryCommitted:
		j.Lottery = lotteryRulesOf(r.Def.Lottery)
	case sku.RecordReserved, sku.RecordEntered:
		j.Subjects = subjectsOf(r.Holder)
	}
	return j
}

// reservationSeq is the reservation a record is about, 0 for none: an
// ENTERED record's seq is its entry's, not a reservation's.
func reservationSeq(r *sku.Record) uint32 {
	if r.Type == sku.RecordEntered {
		return 0
	}
	return r.Seq
}

// recordFilter selects the records of one reservation, user or request.
type recordFilter struct {
	seq       uint32 // --reservation
	userID    string // --user
	requestID string // --request
	// seqs are the reservations of the user or request, learned from the
	// snapshot and from RESERVED records as the scan goes, and from the WON
	// records of its lottery entries (entries, from ENTERED records: a WON
	// names the entry, not the user).
	seqs    map[uint32]bool
	entries map[uint32]bool
}

func (f *recordFilter) active() bool { return f.seq != 0 || f.userID != "" || f.requestID != "" }

func (f *recordFilter) match(r *sku.Record) bool {
	seq := reservationSeq(r)
	if f.seq != 0 && seq != f.seq {
		return false
	}
	if f.userID == "" && f.requestID == "" {
		return true
	}
	mine := (f.userID == "" || r.UserID == f.userID) && (f.requestID == "" || r.RequestID == f.requestID)
	switch {
	case r.Type == sku.RecordReserved && mine:
		f.seqs[r.Seq] = true
	case r.Type == sku.RecordEntered && mine:
		f.entries[r.Seq] = true
	case r.Type == sku.RecordWon && f.entries[r.Lot.EntrySeq]:
		f.seqs[r.Seq] = true
	}
	if f.userID != "" && r.UserID != "" && r.UserID != f.userID {
		return false
	}
	if f.requestID != "" && r.RequestID != "" && r.RequestID != f.requestID {
		return false
	}
	if r.UserID != "" || r.RequestID != "" {
		return true
	}
	return seq != 0 && f.seqs[seq]
}

// learn adds the reservations of the user or request that a snapshot
// holds: their RESERVED records may be truncated from the log.
func (f *recordFilter) learn(m *sku.Machine) {
	if f.requestID != "" {
		if res, ok := m.Lookup(f.requestID); ok && res.Reservation.ReservationID != "" {
			if _, _, seq, _, err := sku.ParseReservationID(res.Reservation.ReservationID); err == nil && res.Outcome == sku.OutcomeAccepted {
				f.seqs[seq] = true
			}
		}
		return
	}
	for seq := uint32(1); seq <= m.Counts().Reservations; seq++ {
		if v, _ := m.Get(seq); v.UserID == f.userID {
			f.seqs[seq] = true
		}
	}
}

// inspectWAL prints one JSON document: the SKU, its log's range, and the
// records from..to that match the filter, oldest first. A record that does
// not decode fails it before anything is printed.
func inspectWAL(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("inspect wal", flag.ContinueOnError)
	from := fs.Uint64("from", 0, "first record index")
	to := fs.Uint64("to", 0, "last record index (0: the end)")
	reservation := fs.String("reservation", "", "only records of this reservation (id or sequence number)")
	user := fs.String("user", "", "only records of this user and their reservations")
	request := fs.String("request", "", "only records of this request_id and the reservation it made")
	pos, err := parse(fs, args, 1)
	if err != nil {
		return err
	}
	if *to != 0 && *from > *to {
		return usageError("inspect wal: --from %d is after --to %d", *from, *to)
	}
	// An id no record can hold would match nothing, and an empty answer
	// would read as "no such records" where the filter was mistyped.
	for _, f := range []struct{ name, value string }{{"--user", *user}, {"--request", *request}} {
		if f.value != "" && !sku.ValidID(f.value) {
			return usageError("inspect wal: %s %q is not an id (%s)", f.name, f.value, sku.IDRule)
		}
	}
	skuDir := skudir.FromPath(pos[0]).String()
	log, err := readLog(skudir.LogOf(pos[0]))
	if err != nil {
		return err
	}
	campaignID, skuID := filepath.Base(filepath.Dir(skuDir)), filepath.Base(skuDir)
	filter := recordFilter{userID: *user, requestID: *request, seqs: map[uint32]bool{}, entries: map[uint32]bool{}}
	if *reservation != "" {
		if filter.seq, err = parseReservation(*reservation, campaignID, skuID); err != nil {
			return usageError("--reservation: %v", err)
		}
	}
	// The newest whole snapshot of the SKU (folderSKU) knows what the log
	// may no longer hold. The reservation ids' key is in the SKU's
	// definition: the snapshot's, or the log's first DEFINE record; so is
	// a celled SKU's cell, which its ids name.
	var key [16]byte
	var cell string
	var ofSKU func(snapshot.Header) error
	if _, _, ok := folderSKU(skuDir); ok {
		ofSKU = func(h snapshot.Header) error {
			if h.CampaignID != campaignID || h.SKUID != skuID {
				return fmt.Errorf("of another SKU: it is of %s/%s", h.CampaignID, h.SKUID)
			}
			return nil
		}
	}
	loaded, _, err := snapshot.LoadNewest(skudir.Dir(skuDir).Snapshots(), ofSKU)
	if err != nil {
		return err
	}
	if loaded != nil {
		campaignID, skuID = loaded.Header.CampaignID, loaded.Header.SKUID
		key, cell = loaded.Machine.Definition().IDKey, loaded.Machine.Definition().Cell
		if filter.userID != "" || filter.requestID != "" {
			filter.learn(loaded.Machine)
		}
	}
	head := walJSON{CampaignID: campaignID, SKUID: skuID, Log: infoOf(log), Records: []recordJSON{}}
	err = scan(log, 1, func(_ uint64, typ byte, payload []byte) error {
		if sku.RecordType(typ) != sku.RecordDefine {
			return nil
		}
		if r, err := sku.DecodeRecord(sku.RecordDefine, payload); err == nil {
			key, cell = r.Def.IDKey, r.Def.Cell
			head.CampaignID, head.SKUID = r.Def.CampaignID, r.Def.SKUID
		}
		return errStop
	})
	if err != nil {
		return err
	}
	if err := decodeAll(log, max(*from, 1), *to); err != nil {
		return err
	}
	out, err := startArrayStream(stdout, head)
	if err != nil {
		return err
	}
	err = scan(log, max(*from, 1), func(index uint64, typ byte, payload []byte) error {
		if *to != 0 && index > *to {
			return errStop
		}
		r, err := sku.DecodeRecord(sku.RecordType(typ), payload)
		if err != nil {
			return fmt.Errorf("record %d: %w", index, err)
		}
		if r.Type == sku.RecordDefine {
			campaignID, skuID, cell, key = r.Def.CampaignID, r.Def.SKUID, r.Def.Cell, r.Def.IDKey
		}
		if filter.active() && !filter.match(&r) {
			return nil
		}
		return out.add(recordOf(index, &r, sku.Definition{CampaignID: campaignID, SKUID: skuID, Cell: cell, IDKey: key}))
	})
	if err != nil {
		return err
	}
	return out.end()
}

// decodeAll decodes the records from..to (to 0: the end) and returns the
// first error, so that inspect wal fails before it prints any record.
func decodeAll(log *wal.Reader, from, to uint64) error {
	return scan(log, from, func(index uint64, typ byte, payload []byte) error {
		if to != 0 && index > to {
			return errStop
		}
		if _, err := sku.DecodeRecord(sku.RecordType(typ), payload); err != nil {
			return fmt.Errorf("record %d: %w", index, err)
		}
		return nil
	})
}

// parseReservation takes a reservation id (campaign~sku~seq~tag) of the
// SKU campaignID/skuID, or a bare sequence number.
func parseReservation(s, campaignID, skuID string) (uint32, error) {
	if c, k, seq, _, err := sku.ParseReservationID(s); err == nil {
		if c != campaignID || k != skuID {
			return 0, fmt.Errorf("%q is a reservation of %s/%s, not of %s/%s", s, c, k, campaignID, skuID)
		}
		return seq, nil
	}
	seq, err := strconv.ParseUint(s, 10, 32)
	if err != nil || seq == 0 {
		return 0, fmt.Errorf("%q is neither a reservation id nor a sequence number", s)
	}
	return uint32(seq), nil
}

// snapshotJSON is what inspect snapshot prints.
type snapshotJSON struct {
	Path          string          `json:"path"`
	Bytes         int64           `json:"bytes"`
	FormatVersion uint16          `json:"format_version"`
	CampaignID    string          `json:"campaign_id"`
	SKUID         string          `json:"sku_id"`
	Index         uint64          `json:"index"`
	CreatedAt     string          `json:"created_at"`
	LastAt        string          `json:"last_record_at"`
	Reservations  uint32          `json:"reservations"`
	Rejections    uint32          `json:"rejections"`
	Refunds       uint32          `json:"refunds"`
	Checksum      string          `json:"checksum"`
	Error         string          `json:"error,omitempty"`
	StateHash     string          `json:"state_hash,omitempty"`
	Paused        *bool           `json:"paused,omitempty"`
	Definition    *definitionJSON `json:"definition,omitempty"`
	Counts        *countsJSON     `json:"counts,omitempty"`
}

// inspectSnapshot prints what a snapshot file holds. A file whose body or
// checksum is damaged is reported (exit 1) with what its header says; one
// without a readable header prints nothing.
func inspectSnapshot(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("inspect snapshot", flag.ContinueOnError)
	pos, err := parse(fs, args, 1)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(pos[0]); err == nil && fi.IsDir() {
		return usageError("inspect snapshot: %s is a folder: name one snapshot file in it (a SKU's are in <data-dir>/<campaign>/<sku>/snapshots)", pos[0])
	}
	b, err := snapshot.ReadBytes(pos[0])
	if errors.Is(err, snapshot.ErrCorrupt) || errors.Is(err, snapshot.ErrVersion) {
		return fmt.Errorf("%s: not a snapshot, or its header is damaged: %w", pos[0], errors.Unwrap(err))
	} else if err != nil {
		return err
	}
	out := snapshotJSON{Path: pos[0], Bytes: int64(len(b)), Checksum: "ok"}
	h, m, derr := snapshot.Decode(b)
	if derr != nil {
		out.Checksum, out.Error = "not checked", derr.Error()
		if _, cerr := snapshot.Check(b); cerr != nil {
			out.Checksum = "bad"
		}
		if h.CampaignID == "" {
			h, _ = snapshot.DecodeHeader(b) // what the header says, unverified (ReadBytes decoded it)
		}
	}
	out.FormatVersion, out.CampaignID, out.SKUID, out.Index = h.Version, h.CampaignID, h.SKUID, h.Index
	out.CreatedAt, out.LastAt = timefmt.OptionalMillis(h.CreatedAt), timefmt.OptionalMillis(h.LastAt)
	out.Reservations, out.Rejections, out.Refunds = h.Reservations, h.Rejections, h.Refunds
	if m != nil {
		c, paused := countsOf(m.Counts()), m.Paused()
		out.StateHash, out.Paused, out.Definition, out.Counts = hashHex(m.Hash()), &paused, definitionOf(m.Definition()), &c
	}
	if err := writeJSON(stdout, out); err != nil {
		return err
	}
	if derr != nil {
		return &checkFailed{msg: derr.Error()}
	}
	return nil
}
