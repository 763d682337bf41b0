/**
 * The database goes away while the server runs (a TCP proxy in front of PostgreSQL is cut):
 * requests that need the store get a clean 503 with Retry-After (no stack, no SQL), the process
 * keeps running, and when the database is back the same requests succeed again.
 */
import { startServer, type RunningServer } from "@plantgate/example-node-server";
import { serverLines } from "@plantgate/http-suite-tests/server-lines";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CuttableProxy } from "./cuttable-proxy.js";
import { CLIENT_SECRET, PASSWORD, POSTGRES_URL, baseServerEnv, clientCredentials, describeIfPostgres, freshSchema, probePostgres, type FreshSchema } from "./support.js";

const problem = await probePostgres();

const UNAVAILABLE_API = { error: 1503, message: "The service is temporarily unavailable; retry later." };

/** Nothing internal leaks into a body: no stack frames, SQL, driver or connection details. */
function expectClean(text: string) {
  expect(text).not.toMatch(/\bat .+:\d+:\d+/);
  expect(text).not.toMatch(/\b(select|insert|update|delete)\b.+\b(from|into|set)\b/i);
  expect(text).not.toMatch(/ECONN|Connection terminated|postgres|127\.0\.0\.1|plantgate_/i);
}

async function retryUntil<T>(what: string, attempt: () => Promise<T>, ok: (value: T) => boolean, withinMs = 10_000): Promise<T> {
  const deadline = Date.now() + withinMs;
  let last: T | undefined;
  for (;;) {
    last = await attempt();
    if (ok(last)) return last;
    if (Date.now() > deadline) throw new Error(`${what}: not recovered within ${withinMs} ms; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describeIfPostgres("the database lost while serving (a cut TCP proxy in front of PostgreSQL)", problem, () => {
  let schema: FreshSchema | undefined;
  let proxy: CuttableProxy | undefined;
  let server: RunningServer | undefined;
  const logged: string[] = [];
  const lines = serverLines();
  let crashed: unknown[] = [];
  const onCrash = (e: unknown) => void crashed.push(e);

  beforeAll(async () => {
    schema = await freshSchema();
    const real = new URL(POSTGRES_URL);
    proxy = new CuttableProxy({ host: real.hostname, port: Number(real.port || 5432) });
    const proxyPort = await proxy.listen();
    const viaProxy = new URL(POSTGRES_URL);
    viaProxy.hostname = "127.0.0.1";
    viaProxy.port = String(proxyPort);
    process.on("uncaughtException", onCrash);
    process.on("unhandledRejection", onCrash);
    crashed = [];
    server = await startServer(baseServerEnv(schema.urlFor(viaProxy.toString())), {
      // Keep the expected "storage unavailable" reports out of the test output, but look at them.
      logger: { error: (message) => void logged.push(message), warn: (message) => void logged.push(message) },
    }, { destination: lines.destination });
  });

  afterAll(async () => {
    process.off("uncaughtException", onCrash);
    process.off("unhandledRejection", onCrash);
    await server?.close().catch(() => {});
    await proxy?.close();
    await schema?.drop();
    if (server) lines.check([CLIENT_SECRET, PASSWORD]);
  });

  it("answers 503 with Retry-After while cut (API and token endpoint), and serves again once restored", async () => {
    const base = server!.url;
    const issued = await clientCredentials(base);
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    const accessToken = issued.body.access_token as string;
    const createPlant = (id: number) =>
      fetch(`${base}/plants`, {
        method: "POST",
        headers: { authorization: `Bearer ${accessToken}`, "content-type": "application/json" },
        body: JSON.stringify({ id, name: `plant ${id}` }),
      });
    const before = await createPlant(1);
    expect(before.status, await before.clone().text()).toBeLessThan(300);

    proxy!.sever();

    const plant = await createPlant(2);
    const plantText = await plant.text();
    expect(plant.status, plantText).toBe(503);
    expect(JSON.parse(plantText)).toEqual(UNAVAILABLE_API);
    expect(plant.headers.get("retry-after")).toMatch(/^\d+$/);
    expectClean(plantText);

    const tokenCut = await clientCredentials(base);
    expect(tokenCut.status, JSON.stringify(tokenCut.body)).toBe(503);
    expect(tokenCut.body).toMatchObject({ error: "temporarily_unavailable" });
    expect(Object.keys(tokenCut.body).sort()).toEqual(["error", "error_description"]);
    expect(tokenCut.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(tokenCut.headers.get("cache-control")).toBe("no-store");
    expectClean(JSON.stringify(tokenCut.body));
    expect(logged).toContain("storage unavailable");

    proxy!.restore();

    // The pg pool reconnects on its own: the same requests succeed again, within ~10 s.
    const recovered = await retryUntil("POST /plants", async () => {
      const r = await createPlant(2);
      return { status: r.status, body: await r.text() };
    }, (r) => r.status < 300);
    expect(JSON.parse(recovered.body)).toMatchObject({ id: 2, name: "plant 2" });
    const tokenBack = await retryUntil("token endpoint", () => clientCredentials(base), (r) => r.status === 200);
    expect(tokenBack.body.access_token).toEqual(expect.any(String));

    // Still the same live server, and nothing escaped as an uncaught error.
    const list = await fetch(`${base}/rbac/ServerCommand/GetAccountList`, { headers: { authorization: `Bearer ${accessToken}` } });
    expect(list.status, await list.clone().text()).toBe(200);
    expect(crashed).toEqual([]);
  });
});
