-- A consumer resuming checks the last event it applied of each position of
-- its cursor against the feed (orders.FeedSource.Check): the events of a
-- history, by log index. A history id is the event id up to its "-".

-- +goose Up
CREATE INDEX order_events_by_history ON order_events (split_part(id, '-', 1), seckill_index);

-- +goose Down
DROP INDEX order_events_by_history;
