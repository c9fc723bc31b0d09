package sku

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/seckill/seckill/internal/timefmt"
)

// Limits of one SKU. Every table has a stated bound (TigerBeetle style).
const (
	// MaxSaleLimit bounds sale_limit: token ids are uint32 and the pool keeps
	// one 4-byte slot per token ever handed out.
	MaxSaleLimit = 1 << 30
	// MaxReservations bounds the reservations one SKU log may hold: the
	// reservation sequence number is a uint32 and one bit of a token slot
	// is used for CONFIRMED.
	MaxReservations = 1<<31 - 1
	// MaxIDLength is the longest campaign, SKU, user, request or payment id.
	MaxIDLength = 64
	// DefaultPaymentWindowMs is the payment window when a definition gives none: 15 minutes.
	DefaultPaymentWindowMs = 15 * 60 * 1000
	// MaxPaymentWindowMs bounds payment_window of a new definition: one
	// day. An unpaid reservation holds its unit out of the sale for the
	// whole window; card and wallet payments settle in minutes, a bank
	// transfer or a payment at pickup within a day, and with a longer
	// window the units of buyers who never pay come back days later,
	// long after the crowd has gone.
	MaxPaymentWindowMs = 24 * 60 * 60 * 1000
	// DefaultEntryPassLeadMs is how long before start_at passes are issued
	// when a definition gives no lead: 10 minutes.
	DefaultEntryPassLeadMs = 10 * 60 * 1000
	// DefaultEntryPassTTLMs is the lifetime of an issued pass when a
	// definition gives none: 10 minutes.
	DefaultEntryPassTTLMs = 10 * 60 * 1000
	// MaxEntryPassTTLMs bounds a pass's lifetime: one day (the layout's
	// bound, entrypass.MaxLifetimeMs). It also bounds the lead.
	MaxEntryPassTTLMs = 24 * 60 * 60 * 1000
)

// Definition is the part of a campaign that one SKU actor owns. Times are
// Unix milliseconds.
type Definition struct {
	CampaignID      string
	SKUID           string
	StartAt         int64 // ms; reserve before it answers NOT_STARTED
	EndAt           int64 // ms; reserve at or after it answers ENDED
	PaymentWindowMs int64 // expire_at = created_at + PaymentWindowMs
	SaleLimit       uint32
	// ReleaseOnClose returns the token of a closed unpaid reservation to the
	// pool. When false the token stays bound until an operator calls release.
	ReleaseOnClose bool
	// IDKey keys the tags that make reservation ids unguessable (see
	// FormatReservationID). The engine draws it at random when it first
	// defines the SKU; it never changes.
	IDKey [16]byte
	// Lottery, when set, makes the SKU a lottery sale (lottery.go): it is
	// recorded by LOTTERY_COMMITTED, not by DEFINE, and never changes.
	Lottery *LotteryRules

	// EntryPass says whether a reserve needs an entry pass and when and
	// for how long the SKU's issuing route hands them out (entrypass). The
	// SKU itself never reads a pass: the HTTP ingress checks it.
	EntryPass EntryPassRule
	// MaxUnpaidPerSubject caps the PENDING_PAYMENT reservations that carry
	// the same subject key (a device, payment account, address or network
	// hash from an entry pass); a reserve over it answers SUBJECT_LIMIT and
	// is not recorded. On a lottery it caps the entries per subject key
	// instead (each may win an unpaid reservation: overEntryCap). 0: no
	// cap. The cap is per SKU.
	MaxUnpaidPerSubject uint32
	// PaymentWindowHighRiskMs is the payment window of a reservation whose
	// pass has risk >= 1; 0: PaymentWindowMs. At most PaymentWindowMs.
	PaymentWindowHighRiskMs int64

	// Cell, when set, makes the SKU celled: this process is that cell and
	// sells only the token ranges the quota ledger granted it (GRANT
	// records), not 1..sale_limit, and never records SOLD_OUT (other
	// cells may still return units). Empty: the whole sale_limit is
	// sellable here, as for every SKU before cells.
	Cell string
	// CellMapVersion is the version of the campaign's frozen cell map (the
	// user -> cell routing) this cell enforces. 0 when not celled.
	CellMapVersion uint64

	// PurchaseLimit is the campaign's one-purchase scope
	// (purchase_limit.go): per SKU (the default) or over the whole
	// campaign. The same for every SKU of a campaign; never changes.
	PurchaseLimit PurchaseLimit
}

// EntryPassRule is a definition's entry_pass object. Zero times take the
// defaults (EntryPassLead, EntryPassTTL).
type EntryPassRule struct {
	// Required refuses a reserve without a pass (ENTRY_PASS_REQUIRED).
	Required bool
	// LeadMs: passes are issued from start_at - LeadMs to end_at.
	LeadMs int64
	// TTLMs is the lifetime of an issued pass.
	TTLMs int64
}

// EntryPassLead returns the lead in ms: LeadMs, or DefaultEntryPassLeadMs.
func (d Definition) EntryPassLead() int64 {
	if d.EntryPass.LeadMs == 0 {
		return DefaultEntryPassLeadMs
	}
	return d.EntryPass.LeadMs
}

// EntryPassTTL returns the lifetime of an issued pass in ms: TTLMs, or
// DefaultEntryPassTTLMs.
func (d Definition) EntryPassTTL() int64 {
	if d.EntryPass.TTLMs == 0 {
		return DefaultEntryPassTTLMs
	}
	return d.EntryPass.TTLMs
}

// PaymentWindowFor returns the payment window of a reservation made by h,
// in ms: the high-risk window for risk >= 1 when the definition sets one,
// else PaymentWindowMs. It is the one owner of the rule; the RESERVED
// record keeps the expire_at it gave, and Apply checks it.
func (d Definition) PaymentWindowFor(h Holder) int64 {
	if h.HighRisk() && d.PaymentWindowHighRiskMs > 0 {
		return d.PaymentWindowHighRiskMs
	}
	return d.PaymentWindowMs
}

// hasPassFields reports whether any entry-pass field is set: only then
// do the DEFINE record and the state carry them.
func (d *Definition) hasPassFields() bool {
	return d.EntryPass != (EntryPassRule{}) || d.MaxUnpaidPerSubject != 0 || d.PaymentWindowHighRiskMs != 0
}

// ErrInvalidDefinition is wrapped by Validate and by redefinitions that are
// not allowed.
var ErrInvalidDefinition = errors.New("invalid definition")

// Validate checks the ids, the window and the limits.
func (d Definition) Validate() error {
	if !ValidID(d.CampaignID) {
		return fmt.Errorf("%w: campaign_id %q must be %s", ErrInvalidDefinition, d.CampaignID, IDRule)
	}
	if !ValidID(d.SKUID) {
		return fmt.Errorf("%w: sku_id %q must be %s", ErrInvalidDefinition, d.SKUID, IDRule)
	}
	if d.EndAt <= d.StartAt {
		return fmt.Errorf("%w: end_at must be after start_at", ErrInvalidDefinition)
	}
	if d.PaymentWindowMs <= 0 {
		return fmt.Errorf("%w: payment_window must be positive", ErrInvalidDefinition)
	}
	if d.SaleLimit == 0 || d.SaleLimit > MaxSaleLimit {
		return fmt.Errorf("%w: sale_limit must be 1..%d", ErrInvalidDefinition, MaxSaleLimit)
	}
	if d.Cell != "" && !ValidID(d.Cell) {
		return fmt.Errorf("%w: cell %q must be %s", ErrInvalidDefinition, d.Cell, IDRule)
	}
	if d.Cell == "" && d.CellMapVersion != 0 {
		return fmt.Errorf("%w: a cell map version without a cell", ErrInvalidDefinition)
	}
	if d.Cell != "" && d.Lottery != nil {
		return fmt.Errorf("%w: a celled SKU cannot be a lottery (the draw needs every entry in one log)", ErrInvalidDefinition)
	}
	if d.Cell != "" && d.MaxUnpaidPerSubject != 0 {
		return fmt.Errorf("%w: a celled SKU cannot cap max_unpaid_per_subject (each cell would count only its own users)", ErrInvalidDefinition)
	}
	if d.EntryPass.LeadMs < 0 || d.EntryPass.LeadMs > MaxEntryPassTTLMs {
		return fmt.Errorf("%w: entry_pass.lead must be 0..%d ms", ErrInvalidDefinition, MaxEntryPassTTLMs)
	}
	if d.EntryPass.TTLMs < 0 || d.EntryPass.TTLMs > MaxEntryPassTTLMs {
		return fmt.Errorf("%w: entry_pass.ttl must be 0..%d ms", ErrInvalidDefinition, MaxEntryPassTTLMs)
	}
	if d.MaxUnpaidPerSubject > MaxSaleLimit {
		return fmt.Errorf("%w: max_unpaid_per_subject must be 0..%d", ErrInvalidDefinition, MaxSaleLimit)
	}
	if d.PaymentWindowHighRiskMs < 0 || d.PaymentWindowHighRiskMs > d.PaymentWindowMs {
		return fmt.Errorf("%w: payment_window_high_risk must be 0..payment_window", ErrInvalidDefinition)
	}
	if err := d.checkPurchaseLimit(); err != nil {
		return err
	}
	if d.Lottery != nil {
		return d.Lottery.validate(d.SaleLimit)
	}
	return nil
}

// ValidateNew is Validate for a definition being decided (Machine.Define,
// the HTTP API before it defines anything, a cells publish), with the
// rules only a new decision must meet; replay does not check them again,
// so a log decided under older rules still replays:
//   - payment_window at most MaxPaymentWindowMs;
//   - a lottery's beacon round published before end_at: the draw makes
//     reservations, and none is made at or after end_at.
func (d Definition) ValidateNew() error {
	if err := d.Validate(); err != nil {
		return err
	}
	if d.PaymentWindowMs > MaxPaymentWindowMs {
		return fmt.Errorf("%w: payment_window must be at most %s", ErrInvalidDefinition, timefmt.Duration(MaxPaymentWindowMs))
	}
	if d.Lottery != nil {
		if t, _ := d.Lottery.Beacon.TimeMs(); t >= d.EndAt {
			return fmt.Errorf("%w: beacon round %d is published at %s, not before end_at %s",
				ErrInvalidDefinition, d.Lottery.Beacon.Round, timefmt.Millis(t), timefmt.Millis(d.EndAt))
		}
	}
	return nil
}

// Repeats reports whether d, as an operator states it (a zero IDKey
// meaning "keep it", as CheckRedefine takes it), is cur: Machine.Define
// records nothing for it, so it is no new decision and the rules of one
// (ValidateNew) do not apply to it.
func (d Definition) Repeats(cur Definition) bool {
	if d.IDKey == ([16]byte{}) {
		d.IDKey = cur.IDKey
	}
	return cur.sameDefinition(d)
}

// CheckRedefine reports whether next may replace d: the same campaign, SKU,
// start_at, payment_window, payment_window_high_risk, release_on_close and
// purchase_limit;
// end_at may only move later and sale_limit only grow. entry_pass and
// max_unpaid_per_subject may change (a cap applies to the reserves decided
// after it; reservations already made stay).
func (d Definition) CheckRedefine(next Definition) error {
	if err := next.Validate(); err != nil {
		return err
	}
	switch {
	case next.CampaignID != d.CampaignID || next.SKUID != d.SKUID:
		return fmt.Errorf("%w: campaign or sku id changed", ErrInvalidDefinition)
	case next.StartAt != d.StartAt:
		return fmt.Errorf("%w: start_at may not change", ErrInvalidDefinition)
	case next.PaymentWindowMs != d.PaymentWindowMs:
		return fmt.Errorf("%w: payment_window may not change", ErrInvalidDefinition)
	case next.PaymentWindowHighRiskMs != d.PaymentWindowHighRiskMs:
		// Each window's expire_at must grow with seq: the expiry walks rely on it.
		return fmt.Errorf("%w: payment_window_high_risk may not change", ErrInvalidDefinition)
	case next.ReleaseOnClose != d.ReleaseOnClose:
		return fmt.Errorf("%w: release_on_close may not change", ErrInvalidDefinition)
	case next.IDKey != d.IDKey && next.IDKey != [16]byte{}: // zero: "keep it"
		return fmt.Errorf("%w: the reservation id key may not change", ErrInvalidDefinition)
	case next.Cell != d.Cell || next.CellMapVersion != d.CellMapVersion:
		return fmt.Errorf("%w: the cell and its cell map are frozen", ErrInvalidDefinition)
	case next.PurchaseLimit != d.PurchaseLimit:
		return CheckCampaignPurchaseLimit(&d, &next)
	case next.EndAt < d.EndAt:
		return fmt.Errorf("%w: end_at may only be extended", ErrInvalidDefinition)
	case next.SaleLimit < d.SaleLimit:
		return fmt.Errorf("%w: sale_limit may only be raised", ErrInvalidDefinition)
	}
	return d.checkLotteryRedefine(next)
}

// IDRule is ValidID's rule in words, for every message that refuses an id
// ("sku_id must be " + IDRule); its length is MaxIDLength.
const IDRule = `1-64 characters of [A-Za-z0-9._:-], not "." or ".."`

// ValidID reports whether s is 1-64 characters of [A-Za-z0-9._:-], the
// alphabet of every id the engine accepts, and not "." or "..": campaign
// and SKU ids name folders of the data dir.
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLength || s == "." || s == ".." {
		return false
	}
	// One table load per character and one branch per id: every reserve
	// checks its request_id and user_id this way, deciding and applying.
	valid := byte(1)
	for i := 0; i < len(s); i++ {
		valid &= idChars[s[i]]
	}
	return valid == 1
}

// idChars is 1 for the bytes of ValidID's alphabet, [A-Za-z0-9._:-], and
// 0 for the others.
var idChars = func() (t [256]byte) {
	for c := range t {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == ':' || c == '-' {
			t[c] = 1
		}
	}
	return t
}()

// reservationIDSep separates the parts of a reservation id. It is outside the
// id alphabet and unreserved in URLs (RFC 3986, section 2.3), so ids need no escaping.
const reservationIDSep = "~"

// TagLength is the length of a reservation id's tag: 16 hex digits (64 bits).
const TagLength = 16

// FormatReservationID returns "<campaign>~<sku>~<seq>~<tag>". A reservation
// id names its campaign and SKU, so a router finds the owning actor without
// a table; the tag, keyed by the SKU's secret IDKey, makes it unguessable,
// so the id works as the capability to read, pay or cancel the reservation
// (sequence numbers alone could be walked).
func FormatReservationID(campaignID, skuID string, seq uint32, key [16]byte) string {
	return newIDTagger(key).format(campaignID, skuID, "", seq)
}

// FormatCellReservationID is FormatReservationID for a celled SKU:
// "<campaign>~<sku>~<cell>~<seq>~<tag>", so pay, cancel and status are
// routed to the cell by parsing the id (ReservationCell).
func FormatCellReservationID(campaignID, skuID, cell string, seq uint32, key [16]byte) string {
	return newIDTagger(key).format(campaignID, skuID, cell, seq)
}

// ReservationIDs formats the reservation ids of one SKU (a celled SKU's
// name its cell: FormatCellReservationID), keeping its key's cipher, which
// FormatReservationID builds for every id: a reader of many ids (the
// event feed) pays the key schedule once. Not safe for concurrent use.
type ReservationIDs struct {
	campaignID, skuID, cell string
	tags                    *idTagger
}

// NewReservationIDs returns the formatter of def's reservation ids.
func NewReservationIDs(def Definition) *ReservationIDs {
	return &ReservationIDs{campaignID: def.CampaignID, skuID: def.SKUID, cell: def.Cell, tags: newIDTagger(def.IDKey)}
}

// Format returns the reservation id of seq.
func (r *ReservationIDs) Format(seq uint32) string {
	return r.tags.format(r.campaignID, r.skuID, r.cell, seq)
}

// ReservationCell returns the cell named by a celled SKU's reservation
// id, and "" for any other id (malformed ones included).
func ReservationCell(id string) string {
	_, _, cell, _, _, _ := ParseCellReservationID(id)
	return cell
}

// idTagger makes the tags of one SKU's reservation ids: hex of the first 8
// bytes of AES_key(seq).
type idTagger struct {
	c   cipher.Block
	buf [aes.BlockSize]byte // scratch: a local would escape through the interface call
}

func newIDTagger(key [16]byte) *idTagger {
	c, err := aes.NewCipher(key[:])
	if err != nil {
		panic(err) // a 16-byte key always makes a cipher
	}
	return &idTagger{c: c}
}

// format returns the reservation id of seq, in one allocation; a celled
// SKU's (cell not empty) names its cell after the SKU.
func (t *idTagger) format(campaignID, skuID, cell string, seq uint32) string {
	// ids are at most 64 bytes each, seq at most 10 digits.
	var buf [3*MaxIDLength + 4*len(reservationIDSep) + 10 + TagLength]byte
	b := append(buf[:0], campaignID...)
	b = append(b, reservationIDSep...)
	b = append(b, skuID...)
	b = append(b, reservationIDSep...)
	if cell != "" {
		b = append(b, cell...)
		b = append(b, reservationIDSep...)
	}
	b = strconv.AppendUint(b, uint64(seq), 10)
	b = append(b, reservationIDSep...)
	tag := t.tag(seq)
	b = append(b, tag[:]...)
	return string(b)
}

// tag is the tag of reservation seq's id.
func (t *idTagger) tag(seq uint32) [TagLength]byte {
	t.buf = [aes.BlockSize]byte{}
	binary.BigEndian.PutUint32(t.buf[:], seq)
	t.c.Encrypt(t.buf[:], t.buf[:])
	var tag [TagLength]byte
	hex.Encode(tag[:], t.buf[:TagLength/2])
	return tag
}

// ErrBadReservationID is returned by ParseReservationID.
var ErrBadReservationID = errors.New("malformed reservation_id")

// ParseReservationID splits an id made by FormatReservationID or
// FormatCellReservationID (whose cell it skips: see ReservationCell). It
// checks the form only (ErrBadReservationID otherwise): whether the SKU
// issued it is for the SKU to say (Machine.Issued, which needs the cell:
// ParseCellReservationID).
func ParseReservationID(id string) (campaignID, skuID string, seq uint32, tag string, err error) {
	campaignID, skuID, _, seq, tag, err = ParseCellReservationID(id)
	return campaignID, skuID, seq, tag, err
}

// ParseCellReservationID is ParseReservationID with the cell the id names:
// a celled SKU's, "" for a four-part id.
func ParseCellReservationID(id string) (campaignID, skuID, cell string, seq uint32, tag string, err error) {
	parts := strings.Split(id, reservationIDSep)
	if len(parts) == 5 && ValidID(parts[2]) {
		cell = parts[2]
		parts = append(parts[:2], parts[3:]...)
	}
	if len(parts) != 4 {
		return "", "", "", 0, "", ErrBadReservationID
	}
	c, s, n, t := parts[0], parts[1], parts[2], parts[3]
	if !ValidID(c) || !ValidID(s) || len(n) == 0 || len(n) > 10 || n[0] == '0' || !validTag(t) {
		return "", "", "", 0, "", ErrBadReservationID
	}
	v, perr := strconv.ParseUint(n, 10, 32)
	if perr != nil || v == 0 || v > MaxReservations {
		return "", "", "", 0, "", ErrBadReservationID
	}
	return c, s, cell, uint32(v), t, nil
}

func validTag(t string) bool {
	if len(t) != TagLength {
		return false
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
