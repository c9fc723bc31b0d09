package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seckill/seckill/orders"
)

// migrateRetry is the wait between schema migrations that found
// PostgreSQL unreachable.
const migrateRetry = time.Second

// cannotConnectNow is PostgreSQL's SQLSTATE 57P03 cannot_connect_now: its
// answer to every connection while it starts, recovers after a crash ("the
// database system is in recovery mode") or shuts down.
const cannotConnectNow = "57P03"

// migrateWhenUp migrates the schema, waiting for a PostgreSQL that is not
// up yet (a deployment that starts the order service first, a database
// restarting): every error but PostgreSQL's own answer (a *pgconn.PgError:
// a wrong password or database, a missing permission, which an operator
// must fix) is retried every migrateRetry until ctx ends, logged once, as
// NATS and seckilld unreachable are. PostgreSQL's answer 57P03 is not up
// yet too, and waited for.
func migrateWhenUp(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) (int64, error) {
	logged := false
	for {
		schema, err := orders.Migrate(ctx, pool)
		var refused *pgconn.PgError
		if err == nil || (errors.As(err, &refused) && refused.Code != cannotConnectNow) || ctx.Err() != nil {
			return schema, err
		}
		if !logged {
			log.Warn("orders: PostgreSQL unreachable; waiting for it to migrate the schema", "err", err)
			logged = true
		}
		select {
		case <-ctx.Done():
			return 0, err
		case <-time.After(migrateRetry):
		}
	}
}
