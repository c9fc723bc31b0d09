// Command seckillctl is the operator's tool for seckill data directories:
// it reads a SKU's write-ahead log and snapshots without opening them for
// writing, so it runs offline or beside a running seckilld.
//
//	seckillctl inspect wal DIR [--from N] [--to N] [--reservation ID] [--user ID] [--request ID]
//	seckillctl inspect snapshot FILE
//	seckillctl verify DIR|DATA_DIR
//	seckillctl snapshot DIR
//	seckillctl snapshot --server URL --admin-token T --campaign C --sku S
//	seckillctl restore --from SNAPSHOT_OR_DIR --to DATA_DIR [--until-index N | --until-time T]
//	seckillctl export DIR [--format csv|jsonl]
//	seckillctl lottery verify DIR | --evidence EVIDENCE.json --pool ENTRIES.csv
//	seckillctl reconcile --orders URL --campaign C [--sku S] [--lag D] [--json] (--server URL | --etcd E | --data-dir DIR)
//	seckillctl dashboard-link --server URL --admin-token T
//	seckillctl ha status|switchover --etcd E --replica-set S --admin-token T [--to B]
//	seckillctl ha forget --etcd E --replica-set S --replica R
//
// DIR is a SKU directory (<data-dir>/<campaign>/<sku>) or its wal
// directory; verify also takes a whole data dir. The log is read with
// wal.Reader and copied with wal.CopyRange (package wal owns the format);
// every state is rebuilt with recovery.Plan, the rule seckilld uses too. Exit status: 0 success,
// 1 a check failed (an invariant violation, corruption), 2 a usage or I/O
// error (also a request the server refused, or nothing to snapshot or
// restore).
package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/internal/version"
	"github.com/seckill/seckill/recovery"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1 // a check failed: violation, corruption
	exitUsage  = 2 // bad usage, or an I/O error
)

const usage = `seckillctl: operate on seckill data directories (read-only unless the command writes).

  seckillctl inspect wal DIR [--from N] [--to N] [--reservation ID] [--user ID] [--request ID]
        the log's records, oldest first, in one JSON document
  seckillctl inspect snapshot FILE
        a snapshot's header, checksum and counts
  seckillctl verify DIR|DATA_DIR
        rebuild each SKU (of DIR, or every SKU of a whole data dir) from its
        snapshots and log, check every snapshot against the log and every
        invariant; report every SKU (one JSON document), and exit 1 if any has
        a violation, corruption or a file that cannot be read
  seckillctl snapshot DIR
        write a snapshot of a stopped SKU (offline)
  seckillctl snapshot --server URL --admin-token T --campaign C --sku S
        ask a running seckilld for one (SECKILL_ADMIN_TOKEN also works)
  seckillctl restore --from SNAPSHOT_OR_DIR --to DATA_DIR [--until-index N | --until-time T]
        build a data dir holding one SKU as of a record index or a time; the copy
        is a fork (the same reservation ids): it must not sell beside its source
  seckillctl export DIR [--format csv|jsonl]
        every reservation with its state, user, token, times, payment and refunds
  seckillctl cells publish --etcd E --campaign C --sku S --sale-limit N --cells c1,c2
        --initial UNITS --chunk UNITS [--start T --end T --payment-window D]
        [--purchase-limit sku|campaign]   (D: 1ms to 24h, default 15m)
        publish a celled SKU: definition, frozen cell map, ledger, initial grants
        (campaign scope: every SKU of the campaign with the same --cells)
  seckillctl cells return --etcd E --campaign C --sku S --cell ID --units N --id K
        ask a cell to give back up to N available units (return seq K)
  seckillctl cells write-off --etcd E --campaign C --sku S --cell ID
        write off a lost cell's outstanding quota (granted - returned): recorded in
        the ledger, never granted, credited or resold again; the audit counts it
  seckillctl audit --etcd E --campaign C [--cells c1=URL,...] --admin-token T
        one JSON document: the ledger, each cell's counts, conservation, ok
        (without --cells: the addresses the cells announced in etcd)
  seckillctl lottery verify DIR
  seckillctl lottery verify --evidence EVIDENCE.json --pool ENTRIES.csv
        audit a lottery sale: recompute its draw from its log, or from its published
        evidence and exported pool; a JSON report, exit 1 if any check fails
  seckillctl reconcile --orders postgres://... --campaign C [--sku S] [--lag 30s] [--json]
        (--server URL --admin-token T | --etcd E [--etcd-prefix P] --admin-token T | --data-dir DIR)
        compare the campaign's reservations with seckill-orders' database, one by
        one: list each difference by reservation_id and request_id with its
        idempotent repair, and the totals; exit 1 if there is any
  seckillctl ha status --etcd E --replica-set S --admin-token T [--json]
        each replica of a replica set: its role, epoch, whether it is in the sync
        set, its lag behind the primary (records, ms); from etcd and each
        replica's GET /admin/replica; a replica gone (its lease ended) is down,
        with the role and epoch it last recorded and when
  seckillctl ha switchover --etcd E --replica-set S --to B --admin-token T [--timeout 30s]
        hand the lead to standby B: the primary stops admitting, waits until B
        holds every record, releases the leader key to B alone; prints the pause
  seckillctl ha forget --etcd E --replica-set S --replica R
        remove the record of replica R, down for good, from etcd: ha status no
        longer lists it as down (refused while R is registered)
  seckillctl dashboard-link --server URL --admin-token T
        print a one-time login link to the server's dashboard (works once, within a
        minute; sets an HttpOnly session cookie for 12 h): for a browser the token
        cannot be typed into (headless capture, kiosk screen)

DIR is <data-dir>/<campaign>/<sku> or its wal directory.
Exit status: 0 ok, 1 a check failed (violation, corruption; also cells publish
refused by what etcd holds, nothing published), 2 usage or I/O error
(also a request seckilld refuses: a wrong admin token, an unknown SKU; and nothing
to snapshot or restore: a SKU not yet defined, or a point before its definition).
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit status.
// An unknown command (or subcommand) is a usage error that names it,
// whatever flags follow it: --help and --version answer only a command
// that exists.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "--version", "-version":
		fmt.Fprintln(stdout, version.String("seckillctl"))
		return exitOK
	}
	if name := unknownCommand(args); name != "" {
		return report(usageError("unknown command %q", name), stderr, args[:1]) // the usage of the command around it
	}
	if version.Requested(args) {
		fmt.Fprintln(stdout, version.String("seckillctl"))
		return exitOK
	}
	if version.HelpRequested(args[1:]) {
		fmt.Fprint(stdout, commandUsage(args))
		return exitOK
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "inspect":
		err = runInspect(rest, stdout)
	case "verify":
		err = runVerify(rest, stdout)
	case "snapshot":
		err = runSnapshot(rest, stdout)
	case "restore":
		err = runRestore(rest, stdout, stderr)
	case "export":
		err = runExport(rest, stdout)
	case "cells":
		err = runCells(rest, stdout)
	case "audit":
		err = runClusterAudit(rest, stdout)
	case "lottery":
		err = runLottery(rest, stdout)
	case "reconcile":
		err = runReconcile(rest, stdout)
	case "dashboard-link":
		err = runDashboardLink(rest, stdout, stderr)
	case "ha":
		err = runHA(rest, stdout)
	default:
		err = usageError("unknown command %q", cmd)
	}
	return report(err, stderr, args)
}

// commandUsage returns the part of usage about the command args name
// (its lines and their descriptions, then the notes at the end: the one
// on DIR only for a command that takes one), or all of usage for a
// command it does not know. "cells SUB" is one of the cells subcommands:
// its lines alone.
func commandUsage(args []string) string {
	if len(args) == 0 {
		return usage
	}
	cmd := args[0]
	head, notes, _ := strings.Cut(usage, "\n\nDIR is")
	dirNote, exitNote, _ := strings.Cut(notes, "\nExit status")
	dirNote, exitNote = "DIR is"+dirNote+"\n", "Exit status"+exitNote
	if len(commandTree[cmd]) > 0 && len(args) > 1 && !strings.HasPrefix(args[1], "-") {
		cmd += " " + args[1]
	}
	var b strings.Builder
	keep := false
	for _, line := range strings.Split(head, "\n") {
		if strings.HasPrefix(line, "  seckillctl ") {
			keep = strings.HasPrefix(line, "  seckillctl "+cmd+" ") || line == "  seckillctl "+cmd
		}
		if keep {
			b.WriteString(line + "\n")
		}
	}
	if b.Len() == 0 {
		return usage
	}
	if !strings.Contains(b.String(), "DIR") {
		dirNote = ""
	}
	return "usage:\n" + b.String() + "\n" + dirNote + exitNote
}

// commandTree maps each command of usage to its subcommands (none for a
// command whose usage lines go on with an operand or a flag: "snapshot
// DIR"), read from usage's lines, the one list of the commands.
var commandTree = func() map[string]map[string]bool {
	tree := map[string]map[string]bool{}
	subcommand := regexp.MustCompile(`^[a-z][a-z-]*$`)
	for _, line := range strings.Split(usage, "\n") {
		words := strings.Fields(line)
		if !strings.HasPrefix(line, "  seckillctl ") || len(words) < 2 {
			continue
		}
		if tree[words[1]] == nil {
			tree[words[1]] = map[string]bool{}
		}
		if len(words) > 2 && subcommand.MatchString(words[2]) {
			tree[words[1]][words[2]] = true
		}
	}
	return tree
}()

// unknownCommand returns the command or subcommand of args that usage
// does not list ("frobnicate", "cells frobnicate"), "" when it lists it.
func unknownCommand(args []string) string {
	subs, ok := commandTree[args[0]]
	switch {
	case !ok:
		return args[0]
	case len(subs) > 0 && len(args) > 1 && !strings.HasPrefix(args[1], "-") && !subs[args[1]]:
		return args[0] + " " + args[1]
	}
	return ""
}

// report prints err and maps it to an exit status; a usage error is
// followed by the usage of the command args name (commandUsage).
func report(err error, stderr io.Writer, args []string) int {
	var failed *checkFailed
	var bad *badUsage
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitUsage
	case errors.As(err, &bad):
		fmt.Fprintf(stderr, "seckillctl: %v\n\n%s", err, commandUsage(args))
		return exitUsage
	case errors.As(err, &failed), isCorruption(err):
		fmt.Fprintf(stderr, "seckillctl: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(stderr, "seckillctl: %v\n", err)
	return exitUsage
}

// badUsage is a command line that does not parse.
type badUsage struct{ msg string }

func (e *badUsage) Error() string { return e.msg }

func usageError(format string, args ...any) error {
	return &badUsage{msg: fmt.Sprintf(format, args...)}
}

// checkFailed is a negative answer: exit status 1.
type checkFailed struct{ msg string }

func (e *checkFailed) Error() string { return e.msg }

// isCorruption reports whether err is damage found in the data.
func isCorruption(err error) bool {
	return errors.Is(err, errLogCorrupt) || errors.Is(err, wal.ErrCorrupt) || errors.Is(err, snapshot.ErrCorrupt) ||
		errors.Is(err, snapshot.ErrVersion) || errors.Is(err, sku.ErrBadRecord) || errors.Is(err, sku.ErrDoesNotApply) ||
		errors.Is(err, recovery.ErrNoBase) || errors.Is(err, recovery.ErrShortLog)
}

// parse parses flags placed anywhere among the positional arguments and
// returns those, checking their number.
func parse(fs *flag.FlagSet, args []string, positional int) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageError("%s: %v", fs.Name(), err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	if len(pos) != positional {
		return nil, usageError("%s: want %d argument(s), got %d: %q", fs.Name(), positional, len(pos), pos)
	}
	return pos, nil
}

// writeJSON writes v as indented JSON and a newline.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// arrayStream writes one JSON document, indented as writeJSON indents it,
// whose last field is an array filled one element at a time: the same bytes
// as writeJSON of the whole document, without holding every element (a
// log's records) in memory.
type arrayStream struct {
	w     *bufio.Writer
	count int // elements written
}

// emptyArrayTail ends an indented document whose last field is [].
const emptyArrayTail = "[]\n}"

// startArrayStream writes head, a struct whose last field is an empty
// (non-nil) slice, up to that array's opening bracket.
func startArrayStream(w io.Writer, head any) (*arrayStream, error) {
	b, err := json.MarshalIndent(head, "", "  ")
	if err != nil {
		return nil, err
	}
	if !bytes.HasSuffix(b, []byte(emptyArrayTail)) {
		panic(fmt.Sprintf("startArrayStream: %T does not end with an empty array", head))
	}
	s := &arrayStream{w: bufio.NewWriter(w)}
	_, err = s.w.Write(b[:len(b)-len(emptyArrayTail)+1]) // keeps the '['
	return s, err
}

// add writes the array's next element.
func (s *arrayStream) add(v any) error {
	b, err := json.MarshalIndent(v, "    ", "  ")
	if err != nil {
		return err
	}
	sep := ",\n    "
	if s.count == 0 {
		sep = "\n    "
	}
	s.count++
	if _, err := s.w.WriteString(sep); err != nil {
		return err
	}
	_, err = s.w.Write(b)
	return err
}

// end closes the array and the document, and flushes.
func (s *arrayStream) end() error {
	tail := "\n  ]\n}\n"
	if s.count == 0 {
		tail = "]\n}\n"
	}
	if _, err := s.w.WriteString(tail); err != nil {
		return err
	}
	return s.w.Flush()
}

// parseTime reads an RFC 3339 time or Unix milliseconds.
func parseTime(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%q is neither RFC 3339 (2026-11-30T12:00:00Z) nor Unix milliseconds", s)
	}
	return t.UnixMilli(), nil
}

// countsJSON are a SKU's counters.
type countsJSON struct {
	SaleLimit       uint32 `json:"sale_limit"`
	Available       uint32 `json:"available"`
	Reserved        uint32 `json:"reserved"`
	Confirmed       uint32 `json:"confirmed"`
	Reservations    uint32 `json:"reservations"`
	PendingPayment  uint32 `json:"pending_payment"`
	Paid            uint32 `json:"paid"`
	Closed          uint32 `json:"closed"`
	HeldClosed      uint32 `json:"held_closed"`
	RefundsRequired uint32 `json:"refunds_required"`
	Rejected        uint32 `json:"durable_rejections"`
}

func countsOf(c sku.Counts) countsJSON {
	return countsJSON{c.SaleLimit, c.Available, c.Reserved, c.Confirmed, c.Reservations,
		c.PendingPayment, c.Paid, c.Closed, c.HeldClosed, c.RefundsRequired, c.Rejected}
}

// definitionJSON is a SKU's definition: the fields of the feed's
// seckill.sku.defined event (feed.DefinitionData), and those it leaves out
// (never the reservation id key, a lottery's server seed or pseudonym
// key), each shown when set.
type definitionJSON struct {
	CampaignID string `json:"campaign_id"`
	SKUID      string `json:"sku_id"`
	*feed.DefinitionData
	EntryPassLeadMs int64  `json:"entry_pass_lead_ms,omitempty"`
	EntryPassTTLMs  int64  `json:"entry_pass_ttl_ms,omitempty"`
	Cell            string `json:"cell,omitempty"`
	CellMapVersion  uint64 `json:"cell_map_version,omitempty"`
	// Lottery is a lottery SKU's public rules.
	Lottery *lotteryJSON `json:"lottery,omitempty"`
}

func definitionOf(d sku.Definition) *definitionJSON {
	return &definitionJSON{CampaignID: d.CampaignID, SKUID: d.SKUID, DefinitionData: feed.NewDefinitionData(d),
		EntryPassLeadMs: d.EntryPass.LeadMs, EntryPassTTLMs: d.EntryPass.TTLMs, Cell: d.Cell, CellMapVersion: d.CellMapVersion,
		Lottery: lotteryRulesOf(d.Lottery)}
}

// lotteryJSON is the lottery part of a record (feed.LotteryData, as its
// event carries it) and, for a lottery's rules (LOTTERY_COMMITTED, a
// definition), what the committed event leaves out: the beacon and the
// number of tier quotas.
type lotteryJSON struct {
	*feed.LotteryData
	BeaconSource string `json:"beacon_source,omitempty"`
	BeaconRound  uint64 `json:"beacon_round,omitempty"`
	TierQuotas   *int   `json:"tier_quotas,omitempty"`
}

// lotteryRulesOf renders a lottery's public rules (never its server seed
// or pseudonym key); nil for none.
func lotteryRulesOf(r *sku.LotteryRules) *lotteryJSON {
	if r == nil {
		return nil
	}
	tiers := len(r.Tiers)
	return &lotteryJSON{LotteryData: feed.NewLotteryRules(r), BeaconSource: r.Beacon.Source, BeaconRound: r.Beacon.Round, TierQuotas: &tiers}
}

// subjectKindNames are the JSON names of the subject kinds, by bit.
var subjectKindNames = [sku.SubjectKindCount]string{"device", "payment_account", "address", "network"}

// subjectsOf returns the subject keys an entry pass vouched for, in hex by
// kind (device, payment_account, address, network): hashes, never the raw
// values; nil for none. The feed sends the pass's tier and risk, never
// these.
func subjectsOf(h sku.Holder) map[string]string {
	var subjects map[string]string
	for k := 0; k < sku.SubjectKindCount; k++ {
		if key, ok := h.Key(k); ok {
			if subjects == nil {
				subjects = map[string]string{}
			}
			subjects[subjectKindNames[k]] = hex.EncodeToString(key[:])
		}
	}
	return subjects
}

// joinErrors is a short list of messages.
func joinErrors(msgs []string) string {
	if len(msgs) > 3 {
		return strings.Join(msgs[:3], "; ") + fmt.Sprintf("; and %d more", len(msgs)-3)
	}
	return strings.Join(msgs, "; ")
}
