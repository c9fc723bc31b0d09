package compare

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/bench"
)

// reserveScript is the Lua reservation script (reserve.lua).
//
//go:embed reserve.lua
var reserveScript string

// RedisOptions configures the Redis baseline.
type RedisOptions struct {
	// Binary is the redis-server program (default: found on PATH).
	Binary string
	// WorkDir holds the instance's temporary directory.
	WorkDir string
	// PoolSize bounds the client's connections (at least the concurrency).
	PoolSize int
	// PaymentWindow sets the expire_at written into each stream entry.
	PaymentWindow time.Duration
}

// RedisTarget is a private redis-server with AOF fsync on every write, and
// clients calling the Lua reservation script directly.
type RedisTarget struct {
	options RedisOptions
	serverHome
	client *redis.Client
	script *redis.Script
}

// NewRedisTarget returns the target; Start launches the server.
func NewRedisTarget(options RedisOptions) *RedisTarget {
	if options.PaymentWindow <= 0 {
		options.PaymentWindow = 15 * time.Minute
	}
	return &RedisTarget{options: options, script: redis.NewScript(reserveScript)}
}

// Name returns "redis".
func (t *RedisTarget) Name() string { return "redis" }

// Start launches redis-server on a free loopback port in a new directory,
// with appendonly yes and appendfsync always, and loads the script.
func (t *RedisTarget) Start(ctx context.Context) error {
	binary := t.options.Binary
	if binary == "" {
		found, err := exec.LookPath("redis-server")
		if err != nil {
			return unavailable("redis-server not found on PATH (bench/compare.sh installs Debian's redis-server)")
		}
		binary = found
	}
	dir, err := os.MkdirTemp(t.options.WorkDir, "seckill-compare-redis-")
	if err != nil {
		return err
	}
	t.dir = dir
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	t.process, err = startProcess("redis-server", filepath.Join(dir, "redis.log"), nil, binary,
		"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "",
		"--maxclients", "8192", "--protected-mode", "yes", "--daemonize", "no")
	if err != nil {
		return err
	}
	t.client = redis.NewClient(&redis.Options{
		Addr:            addr,
		PoolSize:        max(t.options.PoolSize, 16),
		PoolTimeout:     30 * time.Second,
		ReadTimeout:     30 * time.Second,
		WriteTimeout:    30 * time.Second,
		MaxRetries:      -1, // a resent EVALSHA could apply twice; the harness counts the error instead
		DisableIdentity: true,
	})
	if err := t.process.waitReady(ctx, func(ctx context.Context) error { return t.client.Ping(ctx).Err() }); err != nil {
		return err
	}
	return t.script.Load(ctx, t.client).Err()
}

// redisKeys are one SKU's keys, all under the hash tag {campaign:sku} so
// that a Redis Cluster would keep them in one slot.
func redisKeys(sku SKURef) []string {
	tag := "{" + sku.CampaignID + ":" + sku.SKUID + "}"
	return []string{"seckill:" + tag + ":results", "seckill:" + tag + ":users", "seckill:" + tag + ":stock", "seckill:" + tag + ":stream"}
}

// Prepare sets the SKU's stock counter.
func (t *RedisTarget) Prepare(ctx context.Context, sku SKURef) (bench.Reserver, error) {
	keys := redisKeys(sku)
	if err := t.client.Set(ctx, keys[2], sku.SaleLimit, 0).Err(); err != nil {
		return nil, err
	}
	return &redisReserver{target: t, keys: keys}, nil
}

type redisReserver struct {
	target *RedisTarget
	keys   []string
}

// Reserve runs the script with EVALSHA (EVAL if the script cache was lost).
func (r *redisReserver) Reserve(ctx context.Context, requestID, userID string) (bench.Reply, error) {
	expireAt := redisExpireAt(r.target.options.PaymentWindow)
	values, err := r.target.script.Run(ctx, r.target.client, r.keys, requestID, userID, "r-"+requestID, expireAt).Slice()
	if err != nil {
		return bench.Reply{}, err
	}
	return redisReply(values)
}

// redisExpireAt is the expire_at (Unix ms) of a reservation made now.
func redisExpireAt(window time.Duration) int64 { return time.Now().Add(window).UnixMilli() }

// redisReply classifies the script's answer.
func redisReply(values []any) (bench.Reply, error) {
	if len(values) == 0 {
		return bench.Reply{}, fmt.Errorf("redis: empty script answer")
	}
	status, _ := values[0].(string)
	reservationID := ""
	if len(values) > 1 {
		reservationID, _ = values[1].(string)
	}
	switch status {
	case "ACCEPTED", "DUPLICATE":
		return bench.Reply{Outcome: bench.OutcomeAccepted, ReservationID: reservationID}, nil
	case "ALREADY_RESERVED":
		return bench.Reply{Outcome: bench.OutcomeAlreadyPurchased}, nil
	case "SOLD_OUT":
		return bench.Reply{Outcome: bench.OutcomeSoldOut}, nil
	}
	return bench.Reply{}, fmt.Errorf("redis: script answered %v", values)
}

// Audit reads the SKU's keys: stock left, reservations, users, stream.
func (t *RedisTarget) Audit(ctx context.Context, sku SKURef) (Audit, error) {
	keys := redisKeys(sku)
	pipe := t.client.Pipeline()
	stock := pipe.Get(ctx, keys[2])
	users := pipe.SCard(ctx, keys[1])
	results := pipe.HLen(ctx, keys[0])
	stream := pipe.XLen(ctx, keys[3])
	if _, err := pipe.Exec(ctx); err != nil {
		return Audit{}, err
	}
	left, err := stock.Int64()
	if err != nil {
		return Audit{}, err
	}
	audit := Audit{Checked: true, Sold: results.Val(), Available: left}
	if extra := results.Val() - users.Val(); extra > 0 {
		audit.DuplicateUsers = extra
	}
	switch {
	case left < 0:
		audit.Detail = fmt.Sprintf("stock %d < 0", left)
	case left+results.Val() != sku.SaleLimit:
		audit.Detail = fmt.Sprintf("stock %d + reservations %d != %d", left, results.Val(), sku.SaleLimit)
	case users.Val() != results.Val():
		audit.Detail = fmt.Sprintf("users %d != reservations %d", users.Val(), results.Val())
	case stream.Val() != results.Val():
		audit.Detail = fmt.Sprintf("stream %d != reservations %d", stream.Val(), results.Val())
	default:
		audit.Consistent = true
	}
	return audit, nil
}

// Close stops the server (SIGTERM: it flushes the AOF) and removes its directory.
func (t *RedisTarget) Close() error {
	if t.client != nil {
		_ = t.client.Close()
	}
	return t.shutdown(syscall.SIGTERM)
}
