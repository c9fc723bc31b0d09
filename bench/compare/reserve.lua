-- Flash-sale reservation, the usual Redis way: one atomic script
-- per attempt. Every key shares the hash tag {campaign:sku}.
-- KEYS[1] hash  request_id -> reservation_id (results of accepted requests)
-- KEYS[2] set   users holding a reservation
-- KEYS[3] string units left
-- KEYS[4] stream admission commands for the order pipeline
-- ARGV[1] request_id, ARGV[2] user_id, ARGV[3] reservation_id, ARGV[4] expire_at (ms)
local existing = redis.call('HGET', KEYS[1], ARGV[1])
if existing then
  return {'DUPLICATE', existing}
end

if redis.call('SISMEMBER', KEYS[2], ARGV[2]) == 1 then
  return {'ALREADY_RESERVED'}
end

local stock = tonumber(redis.call('GET', KEYS[3]) or '-1')
if stock <= 0 then
  return {'SOLD_OUT'}
end

redis.call('DECR', KEYS[3])
redis.call('SADD', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('XADD', KEYS[4], '*',
  'requestId', ARGV[1], 'userId', ARGV[2],
  'reservationId', ARGV[3], 'expireAt', ARGV[4])
return {'ACCEPTED', ARGV[3]}
