package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/seckill/seckill/internal/hostport"
	"github.com/seckill/seckill/replica"
)

// replicaOptions are the flags of a member of a replica set: seckilld
// --replica NAME --replication-addr HOST:PORT --etcd ENDPOINTS runs this
// process as replica NAME of set --replica-set (for a cell, its cell id
// by default: a cell's replicas share its id), leading it or following
// its primary as etcd decides (package replica).
type replicaOptions struct {
	set             string
	name            string
	replicationAddr string
	// advertiseReplication and advertiseHTTP are the addresses published
	// in etcd for the other replicas and the router to dial, when they
	// differ from the listen addresses (NAT, a proxy, a container's
	// published port); empty: the bound listen address.
	advertiseReplication string
	advertiseHTTP        string
	strict               bool
	leaseTTL             time.Duration
	standbyTimeout       time.Duration
}

// enabled reports whether this process is a member of a replica set.
func (o replicaOptions) enabled() bool { return o.name != "" }

// Bounds of --lease-ttl: below a second etcd's own election timeout cuts
// leases short; above a minute a dead primary stops the sale that long.
const (
	minLeaseTTL     = time.Second
	maxLeaseTTL     = time.Minute
	defaultLeaseTTL = 2 * time.Second
)

func registerReplicaFlags(fs *flag.FlagSet, o *replicaOptions) {
	fs.StringVar(&o.name, "replica", "", "run as this replica of a replica set, leading or following as etcd decides (needs --etcd and --replication-addr)")
	fs.StringVar(&o.set, "replica-set", "", "the replica set's name (default: the --cell id; required without --cell)")
	fs.StringVar(&o.replicationAddr, "replication-addr", "", "listen address of the replication stream (host:port): the standbys of this replica, while it leads, copy its logs from here")
	fs.StringVar(&o.advertiseReplication, "advertise-replication-addr", "", "the replication address (host:port) published in etcd for the standbys to dial, when it differs from --replication-addr (default: the address --replication-addr bound)")
	fs.StringVar(&o.advertiseHTTP, "advertise-addr", "", "the HTTP address (host:port) published in etcd for the other replicas, the router and NOT_PRIMARY answers, when it differs from --addr (default: the address --addr bound; needs --replica)")
	fs.BoolVar(&o.strict, "sync-strict", false, "never acknowledge without a standby: with no standby in sync, commits wait (durability over availability)")
	fs.DurationVar(&o.leaseTTL, "lease-ttl", defaultLeaseTTL, fmt.Sprintf("TTL of this replica's lease in etcd, whole seconds (%s..%s): a primary that stops renewing it loses the lead that much later", minLeaseTTL, maxLeaseTTL))
	fs.DurationVar(&o.standbyTimeout, "standby-timeout", 0, "a standby in the sync set that is disconnected, or does not acknowledge, this long is dropped from it (published in etcd first) and commits go on without it (default: --lease-ttl)")
}

// validate checks the replica flags, given the cell's id (cell, "" if
// none) and whether --etcd was given; it fills the set from the cell.
func (o *replicaOptions) validate(cell string, etcd bool) error {
	if !o.enabled() {
		// A replica's flag given to a single node (--replica left out by
		// mistake) would be ignored: the node would sell on its own.
		if o.set != "" || o.replicationAddr != "" || o.strict || o.advertiseReplication != "" || o.advertiseHTTP != "" ||
			o.leaseTTL != defaultLeaseTTL || o.standbyTimeout != 0 {
			return errors.New("--replica-set, --replication-addr, --advertise-replication-addr, --advertise-addr, --lease-ttl, --standby-timeout and --sync-strict need --replica")
		}
		return nil
	}
	if o.set == "" {
		o.set = cell
	}
	switch {
	case !etcd:
		return errors.New("--replica needs --etcd")
	case o.set == "":
		return errors.New("--replica needs --replica-set (or --cell, whose id it then is)")
	case cell != "" && o.set != cell:
		return fmt.Errorf("--replica-set %q of --cell %q: a cell's replicas form the replica set named by its cell id", o.set, cell)
	case !replica.ValidName(o.set) || !replica.ValidName(o.name):
		return fmt.Errorf("--replica-set %q / --replica %q: 1-64 characters of A-Z a-z 0-9 . _ -", o.set, o.name)
	case o.replicationAddr == "":
		return errors.New("--replica needs --replication-addr")
	case o.leaseTTL < minLeaseTTL || o.leaseTTL > maxLeaseTTL || o.leaseTTL%time.Second != 0:
		return fmt.Errorf("--lease-ttl must be whole seconds, %s..%s", minLeaseTTL, maxLeaseTTL)
	case o.standbyTimeout < 0:
		return errors.New("--standby-timeout must be positive")
	}
	if err := hostport.Listen(o.replicationAddr); err != nil {
		return fmt.Errorf("--replication-addr %w", err)
	}
	for flag, addr := range map[string]string{"--advertise-replication-addr": o.advertiseReplication, "--advertise-addr": o.advertiseHTTP} {
		if addr == "" {
			continue
		}
		if err := hostport.Dial(addr); err != nil {
			return fmt.Errorf("%s %w", flag, err)
		}
		if host, _, _ := net.SplitHostPort(addr); host == "" {
			// Another machine would dial its own.
			return fmt.Errorf("%s %q: the address others dial needs a host", flag, addr)
		}
	}
	if o.standbyTimeout == 0 {
		o.standbyTimeout = o.leaseTTL
	}
	return nil
}
