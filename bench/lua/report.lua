-- Shared by every workload script: prints one machine-readable line the harness parses.
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"errors_status":%d,"errors_connect":%d,"errors_read":%d,"errors_write":%d,"errors_timeout":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect, e.read, e.write, e.timeout))
end
