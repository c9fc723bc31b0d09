package compare

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/internal/pgserver"
)

// PostgresOptions configures the PostgreSQL baseline.
type PostgresOptions struct {
	// BinDir holds initdb and postgres (default: the newest
	// /usr/lib/postgresql/*/bin, else the directory of postgres on PATH).
	BinDir string
	// WorkDir holds the cluster's temporary directory.
	WorkDir string
	// PoolSize bounds the connections, as an application's pool would:
	// clients beyond it wait for a connection (default 128).
	PoolSize int
	// PaymentWindow sets each reservation's expire_at.
	PaymentWindow time.Duration
}

// PostgresTarget is a private PostgreSQL cluster with synchronous_commit=on
// and the usual relational reservation transaction (Reserve).
type PostgresTarget struct {
	options PostgresOptions
	server  *pgserver.Server
	pool    *pgxpool.Pool
}

// NewPostgresTarget returns the target; Start creates and starts the cluster.
func NewPostgresTarget(options PostgresOptions) *PostgresTarget {
	if options.PoolSize <= 0 {
		options.PoolSize = 128
	}
	if options.PaymentWindow <= 0 {
		options.PaymentWindow = 15 * time.Minute
	}
	return &PostgresTarget{options: options}
}

// Name returns "postgres".
func (t *PostgresTarget) Name() string { return "postgres" }

// postgresSchema is an inventory, a reservation and an order table, with
// only the columns the transaction uses.
const postgresSchema = `
CREATE TABLE campaign_inventory (
    campaign_id text NOT NULL,
    sku_id      text NOT NULL,
    sale_limit  bigint NOT NULL,
    available   bigint NOT NULL,
    reserved    bigint NOT NULL DEFAULT 0,
    confirmed   bigint NOT NULL DEFAULT 0,
    version     bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (campaign_id, sku_id)
);
CREATE TABLE inventory_reservation (
    reservation_id text PRIMARY KEY,
    campaign_id    text NOT NULL,
    sku_id         text NOT NULL,
    user_id        text NOT NULL,
    request_id     text NOT NULL,
    state          text NOT NULL,
    expire_at      timestamptz NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT reservation_user_unique UNIQUE (campaign_id, user_id),
    CONSTRAINT reservation_request_unique UNIQUE (request_id)
);
CREATE TABLE orders (
    order_id       text PRIMARY KEY,
    reservation_id text NOT NULL UNIQUE,
    user_id        text NOT NULL,
    state          text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);`

// The statements of the reservation transaction.
const (
	reserveUpdate = `UPDATE campaign_inventory
SET available = available - 1, reserved = reserved + 1, version = version + 1
WHERE campaign_id = $1 AND sku_id = $2 AND available > 0`
	reserveInsert = `INSERT INTO inventory_reservation
(reservation_id, campaign_id, sku_id, user_id, request_id, state, expire_at, created_at)
VALUES ($1, $2, $3, $4, $5, 'RESERVED', $6, now())`
	orderInsert = `INSERT INTO orders (order_id, reservation_id, user_id, state, created_at)
VALUES ($1, $2, $3, 'PENDING_PAYMENT', now())`
	reservationByRequest = `SELECT reservation_id, user_id, campaign_id, sku_id FROM inventory_reservation WHERE request_id = $1`
)

// Start creates a cluster in a new directory and starts it on a free
// loopback port with synchronous_commit=on and fsync=on (package pgserver).
func (t *PostgresTarget) Start(ctx context.Context) error {
	server, err := pgserver.Start(ctx, pgserver.Options{BinDir: t.options.BinDir, WorkDir: t.options.WorkDir, Settings: map[string]string{
		"max_connections": strconv.Itoa(t.options.PoolSize + 20), "shared_buffers": "256MB"}})
	if errors.Is(err, pgserver.ErrUnavailable) {
		return unavailable("%v (bench/compare.sh installs Debian's postgresql)", err)
	}
	if err != nil {
		return err
	}
	t.server = server
	config, err := pgxpool.ParseConfig(server.URL("postgres"))
	if err != nil {
		return err
	}
	config.MaxConns = int32(t.options.PoolSize)
	config.MinConns = 0
	config.MaxConnIdleTime = time.Minute
	t.pool, err = pgxpool.NewWithConfig(ctx, config)
	if err != nil {
		return err
	}
	_, err = t.pool.Exec(ctx, postgresSchema)
	return err
}

// ServerCPU sums the server's CPU time, its backends' included, from /proc.
func (t *PostgresTarget) ServerCPU() (time.Duration, bool) {
	if t.server == nil {
		return 0, false
	}
	cpu, err := treeCPU(t.server.PID())
	return cpu, err == nil
}

// Prepare inserts the SKU's inventory row.
func (t *PostgresTarget) Prepare(ctx context.Context, sku SKURef) (bench.Reserver, error) {
	_, err := t.pool.Exec(ctx, `INSERT INTO campaign_inventory (campaign_id, sku_id, sale_limit, available) VALUES ($1, $2, $3, $3)`,
		sku.CampaignID, sku.SKUID, sku.SaleLimit)
	if err != nil {
		return nil, err
	}
	return &postgresReserver{target: t, sku: sku}, nil
}

type postgresReserver struct {
	target *PostgresTarget
	sku    SKURef
}

// Reserve runs the transaction: the conditional UPDATE takes a
// unit (0 rows: none left), the INSERTs record the reservation and its
// order; a unique violation rolls the unit back. A request id seen before
// is answered from its existing reservation.
func (r *postgresReserver) Reserve(ctx context.Context, requestID, userID string) (bench.Reply, error) {
	pool := r.target.pool
	tx, err := pool.Begin(ctx)
	if err != nil {
		return bench.Reply{}, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) // no-op after Commit
	tag, err := tx.Exec(ctx, reserveUpdate, r.sku.CampaignID, r.sku.SKUID)
	if err != nil {
		return bench.Reply{}, err
	}
	if tag.RowsAffected() == 0 {
		_ = tx.Rollback(ctx)
		return r.existing(ctx, requestID, userID, bench.Reply{Outcome: bench.OutcomeSoldOut})
	}
	reservationID := "r-" + requestID
	expireAt := time.Now().Add(r.target.options.PaymentWindow)
	if _, err := tx.Exec(ctx, reserveInsert, reservationID, r.sku.CampaignID, r.sku.SKUID, userID, requestID, expireAt); err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
			return bench.Reply{}, err
		}
		_ = tx.Rollback(ctx)
		// The same request again violates every unique index at once, and
		// PostgreSQL names only the first it checks: look the request up
		// before calling it a second purchase.
		fallback := bench.Reply{}
		if pgErr.ConstraintName == "reservation_user_unique" {
			fallback = bench.Reply{Outcome: bench.OutcomeAlreadyPurchased}
		}
		return r.existing(ctx, requestID, userID, fallback)
	}
	if _, err := tx.Exec(ctx, orderInsert, "o-"+requestID, reservationID, userID); err != nil {
		return bench.Reply{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return bench.Reply{}, err
	}
	return bench.Reply{Outcome: bench.OutcomeAccepted, ReservationID: reservationID}, nil
}

// existing answers a request from its reservation, if it has one: the same
// reservation for the same user and SKU, REQUEST_ID_REUSED otherwise.
// Without one it returns fallback (SOLD_OUT or ALREADY_PURCHASED); with no
// fallback (the zero Reply, OutcomeAccepted) that is an error.
func (r *postgresReserver) existing(ctx context.Context, requestID, userID string, fallback bench.Reply) (bench.Reply, error) {
	var reservationID, owner, campaignID, skuID string
	err := r.target.pool.QueryRow(ctx, reservationByRequest, requestID).Scan(&reservationID, &owner, &campaignID, &skuID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if fallback.Outcome == bench.OutcomeSoldOut || fallback.Outcome == bench.OutcomeAlreadyPurchased {
			return fallback, nil
		}
		return bench.Reply{}, fmt.Errorf("postgres: request %s: unique violation but no reservation", requestID)
	case err != nil:
		return bench.Reply{}, err
	case owner != userID || campaignID != r.sku.CampaignID || skuID != r.sku.SKUID:
		return bench.Reply{Outcome: bench.OutcomeRequestIDReused}, nil
	}
	return bench.Reply{Outcome: bench.OutcomeAccepted, ReservationID: reservationID}, nil
}

// Audit reads the inventory row and counts the reservations and orders.
func (t *PostgresTarget) Audit(ctx context.Context, sku SKURef) (Audit, error) {
	var saleLimit, available, reserved int64
	err := t.pool.QueryRow(ctx, `SELECT sale_limit, available, reserved FROM campaign_inventory WHERE campaign_id = $1 AND sku_id = $2`,
		sku.CampaignID, sku.SKUID).Scan(&saleLimit, &available, &reserved)
	if err != nil {
		return Audit{}, err
	}
	var reservations, users, orders int64
	err = t.pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT r.user_id), count(o.order_id)
FROM inventory_reservation r LEFT JOIN orders o ON o.reservation_id = r.reservation_id
WHERE r.campaign_id = $1 AND r.sku_id = $2`, sku.CampaignID, sku.SKUID).Scan(&reservations, &users, &orders)
	if err != nil {
		return Audit{}, err
	}
	audit := Audit{Checked: true, Sold: reservations, Available: available, DuplicateUsers: reservations - users}
	switch {
	case available < 0:
		audit.Detail = fmt.Sprintf("available %d < 0", available)
	case available+reserved != saleLimit || saleLimit != sku.SaleLimit:
		audit.Detail = fmt.Sprintf("available %d + reserved %d != sale_limit %d", available, reserved, sku.SaleLimit)
	case reserved != reservations:
		audit.Detail = fmt.Sprintf("reserved %d != reservation rows %d", reserved, reservations)
	case orders != reservations:
		audit.Detail = fmt.Sprintf("orders %d != reservations %d", orders, reservations)
	case users != reservations:
		audit.Detail = fmt.Sprintf("distinct users %d != reservations %d", users, reservations)
	default:
		audit.Consistent = true
	}
	return audit, nil
}

// Close closes the pool, stops the cluster and removes its directory.
func (t *PostgresTarget) Close() error {
	if t.pool != nil {
		t.pool.Close()
	}
	if t.server == nil {
		return nil
	}
	return t.server.Close()
}
