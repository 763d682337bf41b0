/**
 * A repeated, idempotent write (a second RFC 7009 revocation of one token, a client's retry) waits
 * for the write of the first one and fails with it. Until 2026-12-01 the JSON file store answered it
 * at once from memory: one caller was told the revocation succeeded (200) while the write carrying it
 * failed, and the restarted store did not have it, so the access token worked again. README: "After
 * a failed write the store refuses every call (503) until restarted".
 */
import { mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPlantgate } from "@plantgate/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createJsonFileStorage } from "../src/json-file-storage.js";

let dir: string;
let file: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "plantgate-json-ack-"));
  file = join(dir, "nested", "store.json");
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const BASE = "https://json-ack.plantgate.test";

describe("JSON file storage: an acknowledged change is on disk", () => {
  it("two revocations of one access token at once while the write fails: neither is answered 200 unless the revocation survives a restart", async () => {
    const storage = await createJsonFileStorage(file);
    const app = createPlantgate({ storage, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
    const { clientSecret } = await app.admin.createClient({ clientId: "svc" });
    const basic = "Basic " + btoa(`svc:${encodeURIComponent(clientSecret)}`);
    const post = (path: string, body: string) =>
      app.fetch(new Request(`${BASE}${path}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic }, body }));
    // The client signs in once first (its secret's use is recorded now, so the revocations write nothing else).
    const issued = (await (await post("/UserService/connect/token", "grant_type=client_credentials")).json()) as { access_token: string };
    const jti = (JSON.parse(Buffer.from(issued.access_token.split(".")[1]!, "base64url").toString()) as { jti: string }).jti;

    // The disk goes away (as json-file.test.ts does it: the folder swapped for a file).
    await rename(join(dir, "nested"), join(dir, "away"));
    await writeFile(join(dir, "nested"), "a file where the folder should be");
    const revoke = () => post("/UserService/connect/revocation", new URLSearchParams({ token: issued.access_token }).toString());
    const statuses = (await Promise.all([revoke(), revoke()])).map((r) => r.status);

    // The restart the store asks for: it reads the file as last written.
    await rm(join(dir, "nested"));
    await rename(join(dir, "away"), join(dir, "nested"));
    await storage.close().catch(() => {});
    const restarted = await createJsonFileStorage(file);
    const revokedAfterRestart = await restarted.revokedTokens.has(jti);
    await restarted.close();

    // Neither caller is told the token is revoked: the write carrying it failed, and the restarted
    // store does not have it.
    expect({ statuses, revokedAfterRestart }).toEqual({ statuses: [503, 503], revokedAfterRestart: false });
  });
});
