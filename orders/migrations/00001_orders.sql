-- The order service's tables. An order follows one seckill reservation;
-- order_events is every feed event applied, keyed as CloudEvents name an
-- event (source, id), so an event delivered twice is applied once; the
-- cursor is where the consumer resumes, written in the same transaction.

-- +goose Up
CREATE TABLE orders (
    reservation_id text PRIMARY KEY,
    campaign_id    text NOT NULL,
    sku_id         text NOT NULL,
    request_id     text NOT NULL,
    user_id        text NOT NULL,
    token_id       bigint NOT NULL,
    -- PENDING_PAYMENT -> PAID, or -> CLOSED (cancelled, expired) ->
    -- REFUND_REQUIRED when a payment arrived after the close.
    state          text NOT NULL CHECK (state IN ('PENDING_PAYMENT', 'PAID', 'CLOSED', 'REFUND_REQUIRED')),
    created_at     timestamptz NOT NULL,
    expire_at      timestamptz NOT NULL,
    paid_at        timestamptz,
    payment_id     text,
    amount         bigint,
    closed_at      timestamptz,
    close_reason   text,
    token_released boolean NOT NULL DEFAULT false,
    last_event_id  text NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX orders_by_sku ON orders (campaign_id, sku_id);

-- Payments seckill recorded for refund: after the close, or a second
-- payment_id on a paid reservation. refunded_at is the payment team's.
CREATE TABLE order_refunds (
    reservation_id text NOT NULL,
    payment_id     text NOT NULL,
    amount         bigint NOT NULL,
    required_at    timestamptz NOT NULL,
    refunded_at    timestamptz,
    PRIMARY KEY (reservation_id, payment_id)
);

CREATE TABLE order_events (
    source        text NOT NULL,
    id            text NOT NULL,
    type          text NOT NULL,
    subject       text,
    seckill_index bigint NOT NULL,
    event_time    timestamptz NOT NULL,
    applied_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    data          jsonb NOT NULL,
    PRIMARY KEY (source, id)
);

CREATE TABLE order_cursors (
    consumer   text PRIMARY KEY,
    cursor     text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE order_cursors;
DROP TABLE order_events;
DROP TABLE order_refunds;
DROP TABLE orders;
