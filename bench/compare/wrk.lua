-- The wrk script of "seckill-bench compare": each request is a reserve
-- with a request_id and a user_id no other request uses (hot: a SKU that
-- never sells out). Arguments: the id prefix, the reserve path.
local next_thread = 0

function setup(thread)
  thread:set("thread_id", next_thread)
  next_thread = next_thread + 1
end

function init(args)
  prefix = args[1] .. "-t" .. thread_id .. "-"
  path = args[2]
  counter = 0
  headers = {["Content-Type"] = "application/json"}
end

function request()
  counter = counter + 1
  local id = prefix .. counter
  return wrk.format("POST", path, headers, '{"request_id":"' .. id .. '","user_id":"' .. id .. '"}')
end

-- done prints one line the comparison reads: requests, duration (us),
-- non-2xx/3xx answers, socket errors, p50 and p99 latency (us).
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("SECKILL_WRK %d %d %d %d %d %d\n", summary.requests, summary.duration, e.status,
    e.connect + e.read + e.write + e.timeout, latency:percentile(50), latency:percentile(99)))
end
