/** The one list of test projects; vitest.config.ts hands it to `test.projects`. */
export default ["packages/*", "tests/*", "examples/custom-storage", "examples/cloudflare-worker", "bench"];
