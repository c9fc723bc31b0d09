package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/seckill/seckill/ledger"
	"github.com/seckill/seckill/replica"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// runHA is seckillctl ha: the replica sets of seckilld (package replica).
func runHA(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError("ha: status, switchover or forget")
	}
	switch args[0] {
	case "status":
		return runHAStatus(args[1:], stdout)
	case "switchover":
		return runHASwitchover(args[1:], stdout)
	case "forget":
		return runHAForget(args[1:], stdout)
	}
	return usageError("ha: unknown %q (status, switchover or forget)", args[0])
}

// haFlags are the flags of every ha command.
type haFlags struct {
	etcd, prefix, set, token *string
}

func addHAFlags(fs *flag.FlagSet) haFlags {
	return haFlags{
		etcd:   fs.String("etcd", "", "etcd endpoints"),
		prefix: fs.String("etcd-prefix", ledger.DefaultPrefix, "key prefix of the replica sets"),
		set:    fs.String("replica-set", "", "the replica set"),
		token:  fs.String("admin-token", "", "admin bearer token of the replicas (default $SECKILL_ADMIN_TOKEN)"),
	}
}

func (f haFlags) check(cmd string) error {
	if *f.token == "" {
		*f.token = os.Getenv("SECKILL_ADMIN_TOKEN")
	}
	if err := required("ha "+cmd, flagGiven{"--etcd", *f.etcd != ""}, flagGiven{"--replica-set", *f.set != ""},
		flagGiven{tokenFlag, *f.token != ""}); err != nil {
		return err
	}
	return f.checkSet(cmd)
}

// checkSet checks --replica-set's name.
func (f haFlags) checkSet(cmd string) error {
	if !replica.ValidName(*f.set) {
		return usageError("ha %s: --replica-set %q is not a replica set's name (1-64 of [A-Za-z0-9._-], not . or ..)", cmd, *f.set)
	}
	return nil
}

// memberState is a replica's GET /admin/replica, as far as seckillctl
// reads it.
type memberState struct {
	Role     string   `json:"role"`
	Epoch    uint64   `json:"epoch"`
	Primary  string   `json:"primary"`
	Sync     []string `json:"sync"`
	Waited   []string `json:"waited"`
	Standbys []struct {
		Name       string `json:"name"`
		Connected  bool   `json:"connected"`
		CaughtUp   bool   `json:"caught_up"`
		LagRecords uint64 `json:"lag_records"`
		LagMillis  int64  `json:"lag_ms"`
	} `json:"standbys"`
	Switchover string `json:"switchover"`
	Copy       *struct {
		Epoch     uint64 `json:"epoch"`
		Connected bool   `json:"connected"`
		Records   uint64 `json:"records"`
		LastError string `json:"last_error"`
	} `json:"copy"`
}

// haReplica is one row of ha status.
type haReplica struct {
	Name        string `json:"replica"`
	HTTP        string `json:"http,omitempty"`
	Replication string `json:"replication,omitempty"`
	// Role is what the replica says, or "unreachable" (registered, its
	// admin route did not answer), "down" (its record in etcd outlived
	// its member key: the lease ended, the process is gone or cut from
	// etcd) or "not registered" (named in the sync key or reported by
	// the primary, with neither a member key nor a record).
	Role       string  `json:"role"`
	Epoch      uint64  `json:"epoch"`
	InSync     bool    `json:"in_sync"`
	Connected  *bool   `json:"connected,omitempty"` // a standby's stream, as its primary sees it
	LagRecords *uint64 `json:"lag_records,omitempty"`
	LagMillis  *int64  `json:"lag_ms,omitempty"`
	Error      string  `json:"error,omitempty"`
	// LastRole, LastEpoch and LastSeen are, for a replica down, the role
	// and epoch its record holds and when it wrote it (by its clock; it
	// rewrites it every 10 s while live).
	LastRole  string     `json:"last_role,omitempty"`
	LastEpoch uint64     `json:"last_epoch,omitempty"`
	LastSeen  *time.Time `json:"last_seen,omitempty"`
}

// haStatus is ha status's document.
type haStatus struct {
	Set      string      `json:"replica_set"`
	Leader   string      `json:"leader"`
	Epoch    uint64      `json:"epoch"`
	Sync     []string    `json:"sync"`
	Replicas []haReplica `json:"replicas"`
}

func runHAStatus(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ha status", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := addHAFlags(fs)
	asJSON := fs.Bool("json", false, "one JSON document instead of the table")
	if err := fs.Parse(args); err != nil {
		return usageError("ha status: %v", err)
	}
	if err := f.check("status"); err != nil {
		return err
	}
	st, err := readHAStatus(f)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	leader := st.Leader
	if leader == "" {
		leader = "(none: a failover is in progress, or the set is stopped)"
	}
	fmt.Fprintf(stdout, "replica set %s: leader %s, epoch %d, sync set [%s]\n", st.Set, leader, st.Epoch, strings.Join(st.Sync, " "))
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "REPLICA\tROLE\tEPOCH\tIN SYNC\tLAG RECORDS\tLAG MS\tHTTP")
	for _, r := range st.Replicas {
		lagR, lagMs := "-", "-"
		if r.LagRecords != nil {
			lagR, lagMs = fmt.Sprint(*r.LagRecords), fmt.Sprint(*r.LagMillis)
		}
		role := r.Role
		if r.Connected != nil && !*r.Connected {
			role += " (disconnected from the primary)"
		}
		if r.Error != "" {
			role += " (" + r.Error + ")"
		}
		if r.LastSeen != nil {
			role += fmt.Sprintf(" (was %s in epoch %d, last seen %s, %s ago)", r.LastRole, r.LastEpoch,
				r.LastSeen.Format(time.RFC3339), time.Since(*r.LastSeen).Round(time.Second))
		}
		// A replica that did not answer told no epoch: "-", not 0.
		epoch := "-"
		if r.Error == "" && r.Role != "not registered" && r.Role != "down" {
			epoch = fmt.Sprint(r.Epoch)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%v\t%s\t%s\t%s\n", r.Name, role, epoch, r.InSync, lagR, lagMs, r.HTTP)
	}
	return w.Flush()
}

// readHAStatus reads the set's keys in etcd and each member's admin
// route; a standby's lag is its primary's view of it.
func readHAStatus(f haFlags) (haStatus, error) {
	c, err := ledger.Dial(strings.Split(*f.etcd, ","))
	if err != nil {
		return haStatus{}, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, members, err := readSet(ctx, c, f)
	if err != nil {
		return haStatus{}, err
	}
	// A member killed is named by no leased key any more; its record says
	// it was there.
	seen, err := replica.ReadSeen(ctx, c, *f.prefix, *f.set)
	if err != nil {
		return haStatus{}, fmt.Errorf("reading the records of replica set %s in etcd at %s: %w", *f.set, *f.etcd, err)
	}
	st := haStatus{Set: *f.set, Leader: v.Leader, Epoch: v.Sync.Epoch, Sync: v.Sync.Standbys}
	if st.Sync == nil {
		st.Sync = []string{}
	}
	names := make([]string, 0, len(members))
	for name := range members {
		names = append(names, name)
	}
	for name := range seen {
		if _, ok := members[name]; !ok {
			names = append(names, name)
		}
	}
	for _, name := range v.Sync.Standbys {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	states := map[string]memberState{}
	for _, name := range names {
		m, ok := members[name]
		r := haReplica{Name: name, HTTP: m.HTTP, Replication: m.Replication, InSync: slices.Contains(v.Sync.Standbys, name)}
		if rec, had := seen[name]; !ok && had {
			r.Role, r.HTTP, r.Replication = "down", rec.HTTP, rec.Replication
			r.LastRole, r.LastEpoch, r.LastSeen = rec.Role, rec.Epoch, &rec.At
		} else if !ok {
			r.Role = "not registered"
		} else if ms, err := getMemberState(m.HTTP, *f.token); errors.Is(err, errTokenRefused) {
			return haStatus{}, fmt.Errorf("%s (%s): %w", name, m.HTTP, err)
		} else if err != nil {
			r.Role, r.Error = "unreachable", err.Error()
		} else {
			r.Role, r.Epoch, states[name] = ms.Role, ms.Epoch, ms
		}
		st.Replicas = append(st.Replicas, r)
	}
	if p, ok := states[v.Leader]; ok {
		// A standby the primary still reports but etcd no longer holds
		// (dropped from the sync set, its member key gone with its lease: the
		// process is down or cut from etcd) is a row too, with the lag its
		// primary last saw: otherwise the replica an operator must bring back
		// is missing from the list.
		for _, s := range p.Standbys {
			if !slices.Contains(names, s.Name) {
				st.Replicas = append(st.Replicas, haReplica{Name: s.Name, Role: "not registered"})
			}
		}
		slices.SortFunc(st.Replicas, func(a, b haReplica) int { return strings.Compare(a.Name, b.Name) })
		for i := range st.Replicas {
			for _, s := range p.Standbys {
				if s.Name == st.Replicas[i].Name {
					connected, lagR, lagMs := s.Connected, s.LagRecords, s.LagMillis
					st.Replicas[i].Connected, st.Replicas[i].LagRecords, st.Replicas[i].LagMillis = &connected, &lagR, &lagMs
				}
			}
		}
	}
	return st, nil
}

// readSet reads replica set --replica-set in etcd: its view and its
// members. A set of which etcd holds nothing (no leader, sync or member
// key) is an error: a name mistyped, or another --etcd-prefix, would
// otherwise read as a set between two primaries.
func readSet(ctx context.Context, c *clientv3.Client, f haFlags) (replica.View, map[string]replica.Member, error) {
	v, members, err := replica.ReadSet(ctx, c, *f.prefix, *f.set)
	if err != nil && ctx.Err() != nil {
		return v, nil, fmt.Errorf("etcd at %s did not answer reading replica set %s: %w", *f.etcd, *f.set, err)
	}
	if err != nil {
		return v, nil, fmt.Errorf("reading replica set %s in etcd at %s: %w", *f.set, *f.etcd, err)
	}
	if v.Leader == "" && v.SyncRevision == 0 && len(members) == 0 {
		return v, nil, fmt.Errorf("replica set %s: etcd holds nothing under %s%s/: no replica ever ran in it (check --replica-set and --etcd-prefix)",
			*f.set, replica.SetsKey(*f.prefix), *f.set)
	}
	return v, members, nil
}

// knownSet returns readSet's error for a set of which etcd holds nothing,
// not even a record of a replica gone: a forget that finds no record
// there had its --replica-set or --etcd-prefix mistyped, and answering
// "nothing to forget", exit 0, would let the record it meant stay listed.
func knownSet(ctx context.Context, c *clientv3.Client, f haFlags) error {
	seen, err := replica.ReadSeen(ctx, c, *f.prefix, *f.set)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("etcd at %s did not answer reading replica set %s: %w", *f.etcd, *f.set, err)
	}
	if err != nil || len(seen) > 0 {
		return err
	}
	_, _, err = readSet(ctx, c, f)
	return err
}

// errTokenRefused is a replica's 401 to --admin-token: every replica of a
// set takes the same token, so the command cannot go on with it.
var errTokenRefused = errors.New("the admin token was refused: check --admin-token or SECKILL_ADMIN_TOKEN (every replica of a set takes the same one)")

// getMemberState reads one replica's GET /admin/replica.
func getMemberState(base, token string) (memberState, error) {
	var ms memberState
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(base, "/")+"/admin/replica", nil)
	if err != nil {
		return ms, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	client := http.Client{Timeout: 3 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return ms, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return ms, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return ms, fmt.Errorf("GET /admin/replica: %d %s: %w", resp.StatusCode, strings.TrimSpace(string(b)), errTokenRefused)
	default:
		return ms, fmt.Errorf("GET /admin/replica: %d %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return ms, json.Unmarshal(b, &ms)
}

// runHASwitchover asks the primary to hand the lead to --to, then waits
// until --to serves as primary (or the primary says why it did not).
func runHASwitchover(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ha switchover", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := addHAFlags(fs)
	to := fs.String("to", "", "the standby that takes the lead")
	wait := fs.Duration("timeout", 30*time.Second, "how long to wait for the new primary")
	if err := fs.Parse(args); err != nil {
		return usageError("ha switchover: %v", err)
	}
	if err := f.check("switchover"); err != nil {
		return err
	}
	if *to == "" {
		return usageError("ha switchover needs --to")
	}
	// Checked before the primary is asked: once asked, the switchover goes
	// on whatever this command waits, so a --timeout that cannot be waited
	// would report a failure of a switchover that then happens.
	if *wait <= 0 {
		return usageError("ha switchover: --timeout must be positive, not %s", *wait)
	}
	c, err := ledger.Dial(strings.Split(*f.etcd, ","))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	v, members, err := readSet(ctx, c, f)
	cancel()
	if err != nil {
		return err
	}
	from, ok := members[v.Leader]
	switch {
	case v.Leader == "" || !ok:
		return &checkFailed{msg: fmt.Sprintf("replica set %s has no primary now", *f.set)}
	case v.Leader == *to:
		return &checkFailed{msg: fmt.Sprintf("%s is the primary already", *to)}
	}
	target, ok := members[*to]
	if !ok {
		return &checkFailed{msg: fmt.Sprintf("%s is not a registered replica of %s", *to, *f.set)}
	}
	start := time.Now()
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(from.HTTP, "/")+"/admin/replica/switchover?to="+*to, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+*f.token)
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("%s refused the switchover: %d %s: %w", v.Leader, resp.StatusCode, strings.TrimSpace(string(b)), errTokenRefused)
	}
	if resp.StatusCode != http.StatusAccepted {
		return &checkFailed{msg: fmt.Sprintf("%s refused the switchover: %d %s", v.Leader, resp.StatusCode, strings.TrimSpace(string(b)))}
	}
	for deadline := time.Now().Add(*wait); ; time.Sleep(10 * time.Millisecond) {
		if ms, err := getMemberState(target.HTTP, *f.token); err == nil && ms.Role == "primary" {
			took := time.Since(start)
			out, _ := json.Marshal(map[string]any{"replica_set": *f.set, "from": v.Leader, "to": *to, "epoch": ms.Epoch, "took_ms": took.Milliseconds()})
			fmt.Fprintln(stdout, string(out))
			return nil
		}
		if ms, err := getMemberState(from.HTTP, *f.token); err == nil && ms.Role == "primary" &&
			(strings.HasPrefix(ms.Switchover, "aborted") || strings.HasPrefix(ms.Switchover, "refused")) {
			return &checkFailed{msg: fmt.Sprintf("%s: switchover %s", v.Leader, ms.Switchover)}
		}
		if time.Now().After(deadline) {
			return &checkFailed{msg: fmt.Sprintf("%s did not become primary within %s; the switchover was asked and may still complete: see seckillctl ha status", *to, *wait)}
		}
	}
}

// runHAForget removes the record of a replica that will never return
// (replica.Forget), so that ha status no longer lists it as down; a
// replica still registered (live) is refused, exit 1, and a set etcd
// holds nothing of is exit 2 (knownSet). Only etcd is asked: no admin
// token.
func runHAForget(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ha forget", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := addHAFlags(fs)
	name := fs.String("replica", "", "the replica to forget")
	if err := fs.Parse(args); err != nil {
		return usageError("ha forget: %v", err)
	}
	if err := required("ha forget", flagGiven{"--etcd", *f.etcd != ""}, flagGiven{"--replica-set", *f.set != ""},
		flagGiven{"--replica", *name != ""}); err != nil {
		return err
	}
	if err := f.checkSet("forget"); err != nil {
		return err
	}
	if !replica.ValidName(*name) {
		return usageError("ha forget: --replica %q is not a replica's name (1-64 of [A-Za-z0-9._-], not . or ..)", *name)
	}
	c, err := ledger.Dial(strings.Split(*f.etcd, ","))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	had, err := replica.Forget(ctx, c, *f.prefix, *f.set, *name)
	switch {
	case errors.Is(err, replica.ErrRegistered):
		return &checkFailed{msg: fmt.Sprintf("%s of replica set %s is registered (live): stop it for good first, then forget it", *name, *f.set)}
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("etcd at %s did not answer forgetting %s of replica set %s: %w", *f.etcd, *name, *f.set, err)
	case err != nil:
		return err
	case !had:
		if err := knownSet(ctx, c, f); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "replica set %s holds no record of %s: nothing to forget\n", *f.set, *name)
	default:
		fmt.Fprintf(stdout, "replica set %s: %s forgotten (its record removed from etcd)\n", *f.set, *name)
	}
	return nil
}
