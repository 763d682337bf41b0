-- Password grant as BENCH_USERS different accounts in turn (bench-user-0 ...), each with the same
-- password; BENCH_BODY is the rest of the form after the username (password, scope).
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
local path = os.getenv("BENCH_PATH")
local users = tonumber(os.getenv("BENCH_USERS"))
local rest = os.getenv("BENCH_BODY")
local headers = {
  ["Content-Type"] = "application/x-www-form-urlencoded",
  ["Authorization"] = os.getenv("BENCH_AUTH"),
}
local n = 0

function request()
  n = n + 1
  return wrk.format("POST", path, headers, "grant_type=password&username=bench-user-" .. (n % users) .. rest)
end
