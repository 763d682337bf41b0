-- POST /plants with a unique int64 id per request: BENCH_ID_BASE + a counter (one wrk thread).
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
local path = os.getenv("BENCH_PATH")
local base = tonumber(os.getenv("BENCH_ID_BASE"))
local headers = { ["Content-Type"] = "application/json", ["Authorization"] = os.getenv("BENCH_AUTH") }
local n = 0

function request()
  n = n + 1
  return wrk.format("POST", path, headers, string.format('{"id":%d,"name":"Monstera %d","tag":"bench"}', base + n, n))
end
