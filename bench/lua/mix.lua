-- The memory check's steady-state mix, in a repeating cycle of 20 requests: 1 client-credentials
-- token, 9 GetAccountList pages (1-5, bearer-verified), 10 POST /plants with unique ids.
-- Stops sending after BENCH_LIMIT responses (one wrk thread; wrk then idles until -d ends, so
-- the harness uses short slices). Responses still in flight at the stop are not counted.
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
local prefix = os.getenv("BENCH_PREFIX") or ""
local basic = os.getenv("BENCH_BASIC")
local bearer = os.getenv("BENCH_AUTH")
local base = tonumber(os.getenv("BENCH_ID_BASE"))
local limit = tonumber(os.getenv("BENCH_LIMIT"))
local form = { ["Content-Type"] = "application/x-www-form-urlencoded", ["Authorization"] = basic }
local json = { ["Content-Type"] = "application/json", ["Authorization"] = bearer }
local get = { ["Authorization"] = bearer }
local sent, received = 0, 0

function request()
  sent = sent + 1
  local slot = sent % 20
  if slot == 0 then
    return wrk.format("POST", prefix .. "/UserService/connect/token", form, "grant_type=client_credentials")
  elseif slot < 10 then
    return wrk.format("GET", prefix .. "/rbac/ServerCommand/GetAccountList?page=" .. (slot % 5 + 1) .. "&pageSize=20", get)
  end
  return wrk.format("POST", prefix .. "/plants", json, string.format('{"id":%d,"name":"Fern %d"}', base + sent, sent))
end

function response(status, hdrs, body)
  received = received + 1
  if received >= limit then wrk.thread:stop() end
end
