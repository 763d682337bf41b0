-- One fixed request, sent over and over (client credentials, password grant, GetAccountList, bare).
-- Env: BENCH_METHOD, BENCH_BODY, BENCH_CTYPE, BENCH_AUTH (the URL comes from the command line).
dofile(os.getenv("BENCH_LUA_DIR") .. "/report.lua")
wrk.method = os.getenv("BENCH_METHOD") or "GET"
local body = os.getenv("BENCH_BODY")
if body and body ~= "" then wrk.body = body end
local ctype = os.getenv("BENCH_CTYPE")
if ctype and ctype ~= "" then wrk.headers["Content-Type"] = ctype end
local auth = os.getenv("BENCH_AUTH")
if auth and auth ~= "" then wrk.headers["Authorization"] = auth end
