-- What seckill-orders reanchor keeps when a SKU of seckill was restored
-- to an earlier point: the records after the fork index that this
-- service applied are no longer seckill's, and the restored copy re-uses
-- their reservation ids for other sales. Nothing is deleted without a
-- copy here: order_reanchors says what each re-anchoring did, the other
-- tables hold the rows it took out of orders, order_refunds and
-- order_events (or, for an order that stays, its row as it was).

-- +goose Up
CREATE TABLE order_reanchors (
    id            bigserial PRIMARY KEY,
    consumer      text NOT NULL,
    campaign_id   text NOT NULL,
    sku_id        text NOT NULL,
    -- The last record the restored log shares with what this service
    -- read, and the history after it ('' when the log is an older copy
    -- that kept its history).
    fork_index    bigint NOT NULL,
    history       text NOT NULL,
    -- The export the SKU was taken from, and the cursor saved with it.
    as_of_index   bigint NOT NULL,
    cursor        text NOT NULL,
    reanchored_at timestamptz NOT NULL DEFAULT now()
);

-- NOT_IN_SECKILL: the restored seckill has no such reservation; OTHER_SALE:
-- it has the id for another sale (the order left orders for it); REWOUND:
-- the same reservation, whose later events were abandoned (the order
-- stays in orders, in the restored state; this is its row before).
CREATE TABLE diverged_orders (
    reanchor_id bigint NOT NULL REFERENCES order_reanchors (id),
    reason      text NOT NULL CHECK (reason IN ('NOT_IN_SECKILL', 'OTHER_SALE', 'REWOUND')),
    LIKE orders,
    PRIMARY KEY (reanchor_id, reservation_id)
);

-- Refund rows the restored seckill does not list (refunded_at kept).
CREATE TABLE diverged_refunds (
    reanchor_id bigint NOT NULL REFERENCES order_reanchors (id),
    LIKE order_refunds,
    PRIMARY KEY (reanchor_id, reservation_id, payment_id)
);

-- The abandoned events: records the restored log no longer holds, whose
-- ids its next records may take again (a copy older than the cursor).
CREATE TABLE diverged_events (
    reanchor_id bigint NOT NULL REFERENCES order_reanchors (id),
    LIKE order_events,
    PRIMARY KEY (reanchor_id, source, id)
);

-- +goose Down
DROP TABLE diverged_events;
DROP TABLE diverged_refunds;
DROP TABLE diverged_orders;
DROP TABLE order_reanchors;
