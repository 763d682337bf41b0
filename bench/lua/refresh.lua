-- Refresh grant: every request spends a refresh token exactly once. The queue starts with a pool
-- the harness issued before the run (file BENCH_SEEDS, one per line, at least one per connection)
-- and each response's rotated refresh token joins the queue, so no token is ever sent twice.
-- Run with one wrk thread (-t1): the queue is per thread.
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
local queue, head, tail = {}, 1, 0
local path = os.getenv("BENCH_PATH")
local headers = {
  ["Content-Type"] = "application/x-www-form-urlencoded",
  ["Authorization"] = os.getenv("BENCH_AUTH"),
}
local extra = os.getenv("BENCH_BODY") or ""

function init(args)
  for line in io.lines(os.getenv("BENCH_SEEDS")) do
    if line ~= "" then tail = tail + 1; queue[tail] = line end
  end
end

function request()
  local token = "starved" -- only if a rotation failed: shows up as a non-2xx response
  if head <= tail then
    token = queue[head]; queue[head] = nil; head = head + 1
  end
  return wrk.format("POST", path, headers, "grant_type=refresh_token&refresh_token=" .. token .. extra)
end

function response(status, hdrs, body)
  local t = string.match(body, '"refresh_token"%s*:%s*"([^"]+)"')
  if t then tail = tail + 1; queue[tail] = t end
end
