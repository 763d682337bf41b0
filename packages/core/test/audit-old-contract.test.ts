/**
 * A custom audit store written to the storage contract before 2026-12-02
 * (`list({ type?, clientId?, account?, before?, limit })`, `account` matching accountId or
 * username) ignores the new `accountId`/`username` filters and returns every account's records:
 * core holds each of its two lists to its own filter, so no other account's events are shown as
 * this one's (the diff review saw bob's token and the client's creation listed as alice's after
 * eb45cc2; see the README's "Audit account filter (contract change, 2026-12-02)").
 */
import { expect, it } from "vitest";
import { createMemoryStorage, type AuditQuery, type AuditRecord, type SecurityEvent } from "../src/index.js";
import { basic, harness, tokenRequest } from "./helpers.js";

it("an account filter over a store written to the old `account` contract lists only that account's events", async () => {
  const records: AuditRecord[] = [];
  const storage = createMemoryStorage();
  // The old contract, as a third-party backend implements it (plain JS: unknown keys ignored).
  storage.audit = {
    async append(r) { if (!records.some((x) => x.id === r.id)) records.push({ ...r }); },
    async list(q: AuditQuery) {
      const old = q as AuditQuery & { account?: string };
      return records
        .filter((r) => (old.type === undefined || r.type === old.type) && (old.clientId === undefined || r.clientId === old.clientId))
        .filter((r) => old.account === undefined || r.accountId === old.account || r.username === old.account)
        .filter((r) => old.before === undefined || r.time < old.before.time || (r.time === old.before.time && r.id < old.before.id))
        .sort((a, b) => b.time - a.time || (a.id < b.id ? 1 : -1))
        .slice(0, old.limit)
        .map((r) => ({ ...r }));
    },
    async deleteExpired() { return 0; },
  };
  const h = await harness({ storage });
  await h.app.admin.createAccount({ username: "bob", password: "bob-password-1" });
  h.clock.advance(1000);
  expect((await tokenRequest(h.app, { grant_type: "password", username: "bob", password: "bob-password-1" }, { authorization: basic(h.clientId, h.clientSecret) })).status).toBe(200);
  await h.app.flushEvents();
  const listed = await h.app.admin.listEvents({ account: h.username, limit: 100 }).then(
    (page) => page.events.map((e: SecurityEvent) => { const r = e as unknown as Record<string, unknown>; return r.username ?? r.subject ?? r.account_id ?? r.client_id; }),
    (error: Error) => error.message,
  );
  const alice = (await h.app.storage.accounts.findByUsername(h.username))!;
  // Only alice's (her account.created names her), never bob's token nor the client's creation.
  expect(listed).toEqual([h.username === alice.username ? h.username : alice.id]);
});
