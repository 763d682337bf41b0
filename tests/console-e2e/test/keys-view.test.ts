/**
 * The console's signing-key table, in Debian chromium against the real example node server, for
 * what the listing reports and never changes (it only reads the store): no key stored (a sentence
 * instead of an empty table), a key stored in clear while a key encryption key is configured, and a
 * configured signing key that is not stored. The store is compared after each view. And after a
 * rotation of the key encryption key, the "At rest" cell of a key under the older KEK, and of a
 * signer's marker an earlier version sealed under it, names that KEK and says to press Re-encrypt
 * keys (or run keys reencrypt) before removing it; the "Re-encrypt keys" button, after its
 * confirmation, moves them (a cancelled confirmation moves nothing), and then neither cell says so,
 * the button is gone, and a server with the new KEK alone serves the keys.
 * And ids the server supplies on this page (the Security settings, with the clients' table): a
 * kid, a client id and a secret id holding U+202E (RIGHT-TO-LEFT OVERRIDE), which would reverse the
 * rest of a confirmation or a status line, are bidi-isolated (U+2068 ... U+2069) in each sentence
 * naming them, and a server message names them quoted as JSON, which the page isolates, quotes
 * included, an id it did not send too (until 2026-11-30 both showed them bare). The admin API
 * refuses such a client id, but a store may hold one (written here straight into it); a configured
 * key's kid is any string.
 */
import { randomBytes } from "node:crypto";
import { createMemoryStorage, createPlantgate, generateKeyRecord, type SigningKeyRecord, type Storage } from "@plantgate/core";
import type { RunningServer } from "@plantgate/example-node-server";
import { kekId, sealUnder } from "@plantgate/http-suite-tests/kek-rows";
import { serverLines } from "@plantgate/http-suite-tests/server-lines";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ARGS, CHROMIUM, requireChromium, suite, suiteName } from "./chromium.js";
import { startConsoleServer } from "./targets.js";

const ADMIN = { username: "admin", password: "console-e2e-password" };
const KEK = randomBytes(32).toString("base64url");
const EMPTY = "No signing keys are stored yet. The server makes the first one when it first needs it (at its start, or for its first token).";
const RLO = "\u202E";
/** `text` bidi-isolated, as the page shows a value inside a sentence. */
const isolated = (text: string) => `\u2068${text}\u2069`;

/** A key record (generated at `createdAt`, signing from `activatesAt`) stored under `kid`, as a configured key keeps its own kid, any string. */
async function keyNamed(kid: string, createdAt: number, activatesAt = createdAt): Promise<SigningKeyRecord> {
  const r = await generateKeyRecord("ES256", createdAt, activatesAt);
  const rename = (text: string) => JSON.stringify({ ...(JSON.parse(text) as object), kid });
  return { ...r, kid, privateJwk: rename(r.privateJwk), publicJwk: rename(r.publicJwk) };
}

const name = suiteName("console signing-key table in Debian chromium: a store without keys, a key in clear, a configured key not stored");

suite(name, () => {
  let browser: Browser;
  let page: Page;
  const servers: RunningServer[] = [];
  const problems: string[] = [];
  /** Each server's JSON lines, and what none of them may hold. */
  const logs: ReturnType<typeof serverLines>[] = [];
  const sent: string[] = [ADMIN.password, KEK];

  async function start(env: Record<string, string>, storage: Storage): Promise<RunningServer> {
    const lines = serverLines();
    logs.push(lines);
    const server = await startConsoleServer({ admin: ADMIN, storage, lines, env });
    servers.push(server);
    return server;
  }

  /** Signs in on `server` and shows its Security settings, keys loaded. */
  async function open(server: RunningServer): Promise<void> {
    await page.goto(server.consoleUrl!);
    await page.locator("#sign-in-username").fill(ADMIN.username);
    await page.locator("#sign-in-password").fill(ADMIN.password);
    await page.locator("#sign-in-password").press("Enter");
    await page.locator("#view-security").waitFor({ state: "visible" });
    await expect.poll(() => page.locator("#keys-table").getAttribute("aria-busy")).not.toBe("true");
  }

  /** Each key row's cells, by column label. */
  const rows = async () =>
    page.locator("#keys-body tr").evaluateAll((trs) => trs.map((tr) => Object.fromEntries([...tr.querySelectorAll("td")].map((td) => [td.dataset.label, td.textContent]))));

  /** Opens the confirmation of the button named `button`: its title and text. */
  async function confirmation(button: string): Promise<[string | null, string | null]> {
    await page.getByRole("button", { name: button, exact: true }).click();
    await page.locator("#confirm-dialog").waitFor({ state: "visible" });
    return [await page.locator("#confirm-title").textContent(), await page.locator("#confirm-text").textContent()];
  }

  /** Presses `ok` in the open confirmation: the status and JSON body (null for none) of the call it makes. */
  async function confirm(ok: string, method: string): Promise<[number, unknown]> {
    const answered = page.waitForResponse((r) => r.request().method() === method && r.url().includes("/console/api/"));
    await page.locator("#confirm-dialog").getByRole("button", { name: ok, exact: true }).click();
    const response = await answered;
    return [response.status(), response.status() === 204 ? null : await response.json()];
  }

  const status = () => page.locator("#security-status").textContent();

  /**
   * Where each character of `tail` (its last occurrence) in the text of `selector` is drawn: its
   * line (top) and left edge. Line by line, left to right while the words after an id keep their
   * order; right to left where an override reverses them.
   */
  const drawn = (selector: string, tail: string) =>
    page.locator(selector).evaluate((node, tail) => {
      const text = node.firstChild!;
      const from = text.textContent!.lastIndexOf(tail);
      return [...tail].map((_, i) => {
        const range = document.createRange();
        range.setStart(text, from + i);
        range.setEnd(text, from + i + 1);
        const box = range.getBoundingClientRect();
        return [Math.round(box.top), box.left] as const;
      });
    }, tail);
  const leftToRight = (at: (readonly [number, number])[]) => at.every(([top, left], i) => i === 0 || top > at[i - 1]![0] || (top === at[i - 1]![0] && left > at[i - 1]![1]));

  beforeAll(async () => {
    requireChromium();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on("pageerror", (e) => problems.push(e.message));
    page.on("response", (r) => {
      if (r.status() >= 400 && r.status() !== 401) problems.push(`${r.status()} ${r.url()}`);
    });
  });

  afterAll(async () => {
    await browser?.close();
    for (const s of servers) await s.close();
    for (const lines of logs) lines.check(sent);
  });

  it("a store without keys: no rows and a sentence saying when the first key is made; the view makes none. A key stored in clear under a key encryption key shows so and stays so", async () => {
    const storage = createMemoryStorage();
    const server = await start({ PLANTGATE_KEY_ENCRYPTION_KEY: KEK }, storage);
    // The server's start made the first key; removed, the store has none (an embedder whose app has
    // not loaded its keys yet).
    for (const k of await storage.signingKeys.list()) await storage.signingKeys.delete(k.kid);
    await open(server);
    expect(await rows()).toEqual([]);
    expect(await page.locator("#keys-empty").isVisible()).toBe(true);
    expect(await page.locator("#keys-empty").textContent()).toBe(EMPTY);
    expect(await storage.signingKeys.list()).toEqual([]);

    // A key stored in clear (before the KEK was set): listed as such, and left in clear.
    const clear = await generateKeyRecord("ES256", Date.now() - 1000);
    await storage.signingKeys.create(clear);
    await page.reload();
    await page.locator("#keys-body tr").first().waitFor();
    expect(await rows()).toEqual([{ "Key ID": clear.kid, Algorithm: "ES256", Created: expect.any(String), "Signs from": expect.any(String), Status: "Active (signing)", "At rest": "In clear (not encrypted)", Actions: "" }]);
    expect(await page.locator("#keys-empty").isVisible()).toBe(false);
    expect((await storage.signingKeys.list()).map((k) => k.privateJwk)).toEqual([clear.privateJwk]);

    // A rotation stores the new key under the KEK.
    await page.getByRole("button", { name: "Rotate signing key", exact: true }).click();
    await page.getByRole("button", { name: "Rotate key", exact: true }).click();
    await page.locator("#keys-body tr:nth-child(2)").waitFor();
    expect((await rows()).map((r) => [r.Status, r["At rest"]])).toEqual([
      ["Next (published, not signing yet)", "Encrypted"],
      ["Active (signing)", "In clear (not encrypted)"],
    ]);
    expect(problems).toEqual([]);
  });

  it("a configured signing key that is not stored is the active key, 'Not stored yet'; the view does not store it", async () => {
    const storage = createMemoryStorage();
    const configured = JSON.parse((await generateKeyRecord("ES256", 0)).privateJwk) as { kid: string; d: string };
    sent.push(configured.d);
    const server = await start({ PLANTGATE_SIGNING_KEY: JSON.stringify(configured) }, storage);
    // The server's start stored it; removed, as on a store the configured servers have not loaded yet.
    await storage.signingKeys.delete(configured.kid);
    await page.context().clearCookies();
    await open(server);
    await page.locator("#keys-body tr").first().waitFor();
    expect(await rows()).toEqual([{ "Key ID": configured.kid, Algorithm: "ES256", Created: expect.any(String), "Signs from": expect.any(String), Status: "Active (signing)", "At rest": "Not stored yet (configured key)", Actions: "" }]);
    expect(await page.locator("#keys-empty").isVisible()).toBe(false);
    expect(await storage.signingKeys.list()).toEqual([]);
    expect(problems).toEqual([]);
  });
  it("Rotate now while a next key is published: the answer names it in cancelled, the status line says it was deleted, and the table no longer lists it (it would have taken over from the new key)", async () => {
    const storage = createMemoryStorage();
    const server = await start({}, storage);
    await page.context().clearCookies();
    await open(server);
    await page.locator("#keys-body tr").first().waitFor();
    const [first] = await storage.signingKeys.list();
    await page.getByRole("button", { name: "Rotate signing key", exact: true }).click();
    const [, scheduled] = await confirm("Rotate key", "POST");
    const next = (scheduled as { kid: string }).kid;
    await page.locator("#keys-body tr:nth-child(2)").waitFor();
    await page.getByRole("button", { name: "Rotate now (suspected leak)", exact: true }).click();
    await page.locator("#confirm-dialog").waitFor({ state: "visible" });
    const [code, body] = await confirm("Rotate now", "POST");
    const kid = (body as { kid: string }).kid;
    expect([code, body]).toEqual([200, { kid, activatesAt: expect.any(String), status: "active", deleted: [], cancelled: [next] }]);
    await expect.poll(status).toBe(`New signing key ${kid} signs from now on. The next key ${next}, stored before it, was deleted, never having signed.`);
    await expect.poll(async () => (await rows()).map((r) => [r["Key ID"], r.Status])).toEqual([
      [kid, "Active (signing)"],
      [first!.kid, "Retired (verifying only)"],
    ]);
    expect((await storage.signingKeys.list()).map((k) => k.kid).sort()).toEqual([first!.kid, kid].sort());
    expect(problems).toEqual([]);
  });

  it("after a KEK rotation, a key under the older KEK and a signer's marker an earlier version sealed under it name that KEK and say to re-encrypt; the Re-encrypt keys button moves them, and then neither does", async () => {
    const OLD = randomBytes(32).toString("base64url");
    const NEW = randomBytes(32).toString("base64url");
    sent.push(OLD, NEW);
    const storage = createMemoryStorage();
    // Before the rotation: a server with OLD made the first key, sealed under OLD.
    await createPlantgate({ storage, keyEncryptionKeys: [OLD], logger: { error() {}, warn() {} } }).jwks();
    const [key] = await storage.signingKeys.list();
    // A signer's key from before it, its marker sealed under OLD as versions before 2026-11-29 did.
    const signerKey = await generateKeyRecord("ES256", key!.createdAt - 60_000);
    await storage.signingKeys.create({ ...signerKey, privateJwk: sealUnder(OLD, signerKey.kid, "external") });
    const server = await start({ PLANTGATE_KEY_ENCRYPTION_KEY: `${NEW},${OLD}` }, storage);
    await page.context().clearCookies();
    await open(server);
    await page.locator("#keys-body tr:nth-child(2)").waitFor();
    const todo = `an older key encryption key (id ${kekId(OLD)}): press Re-encrypt keys (or run keys reencrypt) before removing it`;
    expect((await rows()).map((r) => [r["Key ID"], r.Status, r["At rest"]])).toEqual([
      [key!.kid, "Active (signing)", `Encrypted under ${todo}`],
      [signerKey.kid, "Retired (verifying only)", `Public key only (held by a signer), its row sealed under ${todo}`],
    ]);
    const reencrypt = page.getByRole("button", { name: "Re-encrypt keys", exact: true });
    const dialog = page.locator("#confirm-dialog");

    // The confirmation says what it does and when not to; cancelled, nothing moves.
    const rowsBefore = await storage.signingKeys.list();
    await reencrypt.click();
    await dialog.waitFor({ state: "visible" });
    expect([await page.locator("#confirm-title").textContent(), await page.locator("#confirm-ok").textContent()]).toEqual(["Re-encrypt the signing keys?", "Re-encrypt keys"]);
    expect(await page.locator("#confirm-text").textContent()).toContain("do this once every running version has both keys");
    await page.locator("#confirm-cancel").click();
    await dialog.waitFor({ state: "hidden" });
    expect(await storage.signingKeys.list()).toEqual(rowsBefore);

    // Confirmed: the page's own call (POST /console/api/signing-keys/reencrypt) moves both.
    await reencrypt.click();
    await dialog.waitFor({ state: "visible" });
    const answered = page.waitForResponse((r) => r.url().endsWith("/console/api/signing-keys/reencrypt"));
    await dialog.getByRole("button", { name: "Re-encrypt keys", exact: true }).click();
    const response = await answered;
    expect([response.request().method(), response.status(), await response.json()]).toEqual(["POST", 200, { reencrypted: [key!.kid, signerKey.kid], unchanged: [], left: [], complete: true }]);
    await expect
      .poll(() => page.locator("#security-status").textContent())
      .toBe(
        "2 signing keys were re-encrypted under the current key encryption key; once this table, reloaded a minute from now, shows no key under an older key encryption key, that key can be removed from PLANTGATE_KEY_ENCRYPTION_KEY.",
      );
    await expect.poll(async () => (await rows()).map((r) => [r["Key ID"], r["At rest"]])).toEqual([
      [key!.kid, "Encrypted"],
      [signerKey.kid, "Public key only (held by a signer)"],
    ]);
    expect(await reencrypt.isVisible()).toBe(false);
    // The row is sealed under NEW now: a server with NEW alone loads and publishes the keys.
    const onlyNew = createPlantgate({ storage, keyEncryptionKeys: [NEW], logger: { error() {}, warn() {} } });
    expect(((await onlyNew.jwks()).keys as { kid: string }[]).map((k) => k.kid).sort()).toEqual([key!.kid, signerKey.kid].sort());
    expect((await storage.signingKeys.list()).map((k) => [k.kid, k.privateJwk.startsWith(`enc:A256GCM:${kekId(NEW)}:`) || k.privateJwk === "external"])).toEqual([
      [key!.kid, true],
      [signerKey.kid, true],
    ]);
    expect(problems).toEqual([]);
  });

  it("keys whose kid is reencrypt or a path cannot carry (\"..\", \".\", \"\") are revoked from the page: its DELETE names the kid in the query, each is gone from the store and the table", async () => {
    const storage = createMemoryStorage();
    const now = Date.now();
    // Keys earlier configurations stored (a configured key keeps its own kid, any string), replaced
    // minutes ago by the key that signs now: retired, revocable.
    const KIDS = ["reencrypt", "..", ".", ""];
    for (const [i, kid] of KIDS.entries()) await storage.signingKeys.create(await keyNamed(kid, now - 600_000 + i * 1000));
    const active = await generateKeyRecord("ES256", now - 300_000);
    await storage.signingKeys.create(active);
    const server = await start({}, storage);
    await page.context().clearCookies();
    await open(server);
    await page.locator(`#keys-body tr:nth-child(${KIDS.length + 1})`).waitFor();
    const dialog = page.locator("#confirm-dialog");
    for (const kid of KIDS) {
      await page.getByRole("button", { name: `Revoke signing key ${kid}`, exact: true }).click();
      await dialog.waitFor({ state: "visible" });
      // The empty kid shows as "" (as the server's messages quote it), not as a double space.
      expect([kid, await page.locator("#confirm-title").textContent()]).toEqual([kid, `Revoke signing key ${kid === "" ? '""' : kid}?`]);
      const answered = page.waitForResponse((r) => r.request().method() === "DELETE");
      await page.getByRole("button", { name: "Revoke key", exact: true }).click();
      const response = await answered;
      // (A 204 has no body for the browser to give.)
      expect([kid, response.url().slice(server.url.length), response.status()]).toEqual([kid, `/console/api/signing-keys?kid=${encodeURIComponent(kid)}`, 204]);
      await expect.poll(() => page.locator("#security-status").textContent()).toBe(`Signing key ${kid === "" ? '""' : kid} was revoked.`);
    }
    await expect.poll(async () => (await rows()).map((r) => [r["Key ID"], r.Status])).toEqual([[active.kid, "Active (signing)"]]);
    expect((await storage.signingKeys.list()).map((k) => k.kid)).toEqual([active.kid]);
    expect(problems).toEqual([]);
  });

  it("a key revoked elsewhere meanwhile: the 404 names its kid quoted as JSON, and the page isolates that quoted kid, a quote and a direction override in it included", async () => {
    const storage = createMemoryStorage();
    const now = Date.now();
    // A configured key's kid is any string; this one holds a quote (escaped in the message, so the
    // kid as it is is not found there) and U+202E, which would reverse the rest of the line.
    const kid = `old"${RLO}key`;
    await storage.signingKeys.create(await keyNamed(kid, now - 600_000));
    await storage.signingKeys.create(await generateKeyRecord("ES256", now - 300_000));
    const server = await start({}, storage);
    await page.context().clearCookies();
    await open(server);
    await page.locator("#keys-body tr:nth-child(2)").waitFor();
    // Another administrator revokes it after this page listed it.
    await storage.signingKeys.delete(kid);
    await page.getByRole("button", { name: `Revoke signing key ${kid}`, exact: true }).click();
    await page.locator("#confirm-dialog").waitFor({ state: "visible" });
    const answered = page.waitForResponse((res) => res.request().method() === "DELETE");
    await page.getByRole("button", { name: "Revoke key", exact: true }).click();
    const response = await answered;
    expect([response.status(), await response.json()]).toEqual([404, { error: 1306, message: 'Signing key "old\\"\u202Ekey" does not exist.' }]);
    await expect.poll(() => page.locator("#security-status").textContent()).toBe('Signing key \u2068"old\\"\u202Ekey"\u2069 does not exist.');
    expect(problems.splice(0)).toEqual([`404 ${server.url}/console/api/signing-keys?kid=${encodeURIComponent(kid)}`]);
  });

  it("a client id and a secret id with U+202E: isolated in each confirmation and status line, and in the server's refusal naming the client id (quoted)", async () => {
    const storage = createMemoryStorage();
    const server = await start({}, storage);
    const clientId = `app${RLO}evil`;
    const secretId = `s${RLO}1`;
    const name = "Legacy app";
    // Made under a stand-in id with ten live secrets, then stored under the override id (as a store
    // from before the admin API's check may hold it), its first secret's id with one too.
    await server.app.admin.createClient({ clientId: "stand-in", name });
    for (let i = 0; i < 9; i++) await server.app.admin.addClientSecret("stand-in");
    const made = (await storage.clients.get("stand-in"))!;
    expect(await storage.clients.delete("stand-in")).toBe(true);
    expect(await storage.clients.create({ ...made, clientId, secrets: made.secrets.map((x, i) => (i === 0 ? { ...x, id: secretId } : x)) })).toBe(true);
    await page.context().clearCookies();
    await open(server);
    await page.locator("#clients-body tr").first().waitFor();

    // A secret added past the ten: the 400 names the client id quoted as JSON, isolated with its quotes.
    expect(await confirmation(`Add a secret to ${name}`)).toEqual([
      `Add a secret to ${name}?`,
      `The current secrets of ${isolated(clientId)} keep working. Give the new one to the application, then revoke the old one.`,
    ]);
    expect(await confirm("Add secret", "POST")).toEqual([400, { error: 1009, message: `client ${JSON.stringify(clientId)} already has 10 secrets; revoke one first` }]);
    await expect.poll(status).toBe(`client ${isolated(JSON.stringify(clientId))} already has 10 secrets; revoke one first`);
    expect(problems.splice(0)).toEqual([`400 ${server.url}/console/api/clients/${encodeURIComponent(clientId)}/secrets`]);

    expect(await confirmation(`Revoke secret ${secretId} of ${name}`)).toEqual([
      `Revoke secret ${isolated(secretId)} of ${name}?`,
      "Applications using this secret can no longer get tokens with it. This cannot be undone.",
    ]);
    expect(await confirm("Revoke secret", "DELETE")).toEqual([204, null]);
    await expect.poll(status).toBe(`Secret ${isolated(secretId)} of ${name} was revoked.`);
    expect((await storage.clients.get(clientId))!.secrets.map((x) => x.id)).toEqual(made.secrets.slice(1).map((x) => x.id));

    expect(await confirmation(`Regenerate the secret of ${name}`)).toEqual([
      `Regenerate the secret of ${name}?`,
      `Every current secret of ${isolated(clientId)} stops working at once. Applications using them must be given the new one.`,
    ]);
    await page.locator("#confirm-cancel").click();
    await page.locator("#confirm-dialog").waitFor({ state: "hidden" });
    expect(await confirmation(`Delete ${name}`)).toEqual([
      `Delete ${name}?`,
      `The application ${isolated(clientId)} can no longer get tokens, and its refresh tokens stop working. This cannot be undone.`,
    ]);
    expect(await confirm("Delete application", "DELETE")).toEqual([204, null]);
    await expect.poll(status).toBe(`${name} was deleted.`);
    expect(await storage.clients.get(clientId)).toBeNull();
    expect(problems).toEqual([]);
  });

  it("a kid with U+202E: isolated in the revoke confirmation and in the status line that it was revoked", async () => {
    const storage = createMemoryStorage();
    const now = Date.now();
    const kid = `old${RLO}key`;
    // Replaced five minutes ago by the key that signs now: retired, revocable.
    await storage.signingKeys.create(await keyNamed(kid, now - 600_000));
    const active = await generateKeyRecord("ES256", now - 300_000);
    await storage.signingKeys.create(active);
    const server = await start({}, storage);
    await page.context().clearCookies();
    await open(server);
    await page.locator("#keys-body tr:nth-child(2)").waitFor();
    expect((await confirmation(`Revoke signing key ${kid}`))[0]).toBe(`Revoke signing key ${isolated(kid)}?`);
    expect(await confirm("Revoke key", "DELETE")).toEqual([204, null]);
    await expect.poll(status).toBe(`Signing key ${isolated(kid)} was revoked.`);
    expect((await storage.signingKeys.list()).map((k) => k.kid)).toEqual([active.kid]);
    expect(problems).toEqual([]);
  });

  it("a revoke refused while the key that took over (its kid with U+202E too) may not be known everywhere: the 409 names both kids quoted, and the status line isolates both, the one the page did not send included", async () => {
    const storage = createMemoryStorage();
    const now = Date.now();
    const kid = `old${RLO}key`;
    const successor = `new${RLO}key`;
    await storage.signingKeys.create(await keyNamed(kid, now - 600_000));
    // Signing since five seconds ago: other instances may still sign with the old key for a minute.
    const takeover = now - 5_000;
    await storage.signingKeys.create(await keyNamed(successor, now - 300_000, takeover));
    const server = await start({}, storage);
    await page.context().clearCookies();
    await open(server);
    await page.locator("#keys-body tr:nth-child(2)").waitFor();
    expect((await confirmation(`Revoke signing key ${kid}`))[0]).toBe(`Revoke signing key ${isolated(kid)}?`);
    const message = (show: (id: string) => string) =>
      `signing key ${show(JSON.stringify(kid))} may still sign on instances that have not re-read the keys since ${show(JSON.stringify(successor))} took over (they do within a minute): revoke it from ${new Date(takeover + 60_000).toISOString()}`;
    expect(await confirm("Revoke key", "DELETE")).toEqual([409, { error: 1307, message: message((id) => id) }]);
    await expect.poll(status).toBe(message(isolated));
    expect(problems.splice(0)).toEqual([`409 ${server.url}/console/api/signing-keys?kid=${encodeURIComponent(kid)}`]);
    expect((await storage.signingKeys.list()).map((k) => k.kid).sort()).toEqual([kid, successor].sort());
  });

  it("a kid holding U+2069 (POP DIRECTIONAL ISOLATE) or a paragraph separator before U+202E cannot end its isolation early: the words after it in the page's sentence keep their order", async () => {
    const storage = createMemoryStorage();
    const now = Date.now();
    // An unmatched U+2069 closed the page's U+2068 inside the kid, and a paragraph separator (U+0085,
    // U+2029) ends every isolate: the U+202E after either then reversed the rest of the line.
    const kids = [`old\u2069${RLO}key`, `old\u0085${RLO}key`, `old\u2029${RLO}key`];
    for (const [i, kid] of kids.entries()) await storage.signingKeys.create(await keyNamed(kid, now - 600_000 + i * 1000));
    await storage.signingKeys.create(await generateKeyRecord("ES256", now - 300_000));
    const server = await start({}, storage);
    await page.context().clearCookies();
    await open(server);
    await page.locator(`#keys-body tr:nth-child(${kids.length + 1})`).waitFor();
    for (const kid of kids) {
      await confirmation(`Revoke signing key ${kid}`);
      expect(await confirm("Revoke key", "DELETE")).toEqual([204, null]);
      await expect.poll(status).toMatch(/ was revoked\.$/);
      expect(leftToRight(await drawn("#security-status", " was revoked.")), JSON.stringify(kid)).toBe(true);
    }
    expect(problems).toEqual([]);
  });

  it("a kid the page did not send, holding U+2069 or U+2029 before U+202E, quoted in a server message: the words after it keep their order", async () => {
    const storage = createMemoryStorage();
    const now = Date.now();
    const tail = " took over (they do within a minute): revoke it from";
    for (const [i, successor] of [`new\u2069${RLO}key`, `new\u2029${RLO}key`].entries()) {
      const kid = `old${i}`;
      await storage.signingKeys.create(await keyNamed(kid, now - 600_000 + i * 1000));
      // Signing since five seconds ago: a revoke of the older key is refused, naming both.
      await storage.signingKeys.create(await keyNamed(successor, now - 300_000 + i * 1000, now - 5_000 + i));
      const server = await start({}, storage);
      await page.context().clearCookies();
      await open(server);
      await page.locator("#keys-body tr:nth-child(2)").waitFor();
      await confirmation(`Revoke signing key ${kid}`);
      expect(await confirm("Revoke key", "DELETE")).toEqual([409, { error: 1307, message: expect.stringContaining(`since ${JSON.stringify(successor)}${tail}`) }]);
      await expect.poll(status).toContain(tail);
      expect(leftToRight(await drawn("#security-status", tail)), JSON.stringify(successor)).toBe(true);
      expect(problems.splice(0)).toEqual([`409 ${server.url}/console/api/signing-keys?kid=${encodeURIComponent(kid)}`]);
      for (const k of await storage.signingKeys.list()) await storage.signingKeys.delete(k.kid);
    }
  });
});
