import { refreshTokenKey, sha256 } from "@plantgate/core";
import { beforeEach, describe, expect, it } from "vitest";
import { expectRecord, fakeHash, inParallel, refreshRecord, seedOwners, T0 } from "../fixtures.js";
import type { SuiteContext } from "../target.js";
import { boot, INVALID_GRANT, ok, passwordGrant, refreshGrant } from "./through-core.js";

/** Sealed replay data is opaque text to a store; this one is as long as a real one (about 1.3 KB). */
const sealed = (label: string) => `v1.${fakeHash(`iv:${label}`).slice(0, 16)}.${fakeHash(`ct:${label}`).repeat(30)}`;
const WINDOW = 30_000;
/** The 50-way races make 50-100 storage calls (and, through the core, 50 signatures): slow engines (D1 under Miniflare) need more than 5 s. */
const RACE_TIMEOUT = 60_000;

/**
 * The refresh-token grace window: `consume` stores the replay data atomically with the
 * consumption, and `graceUse` counts grace uses atomically, never for a revoked token.
 */
export function refreshGraceSuite(s: SuiteContext): void {
  describe("refreshTokens grace window (consume with replay data, graceUse)", () => {
    const tokens = () => s.storage().refreshTokens;
    beforeEach(() => seedOwners(s.storage()));

    it("dropReplays (optional, since 2026-12-03): drops the replay of at most limit tokens consumed at or before the instant, nothing else of them; graceUse then answers null for them; concurrent calls drop each once", async (ctx) => {
      const store = tokens();
      const dropReplays = store.dropReplays?.bind(store);
      if (dropReplays === undefined) return ctx.skip();
      // Seven rotated at T0+1..T0+7 with replays, one at T0+9 with a replay, one rotated without a replay, one not rotated.
      const old = Array.from({ length: 7 }, (_, i) => refreshRecord({ tokenHash: fakeHash(`drop-${i}`), consumedAt: T0 + 1 + i, replay: sealed(`drop-${i}`), graceUses: i % 2 }));
      const fresh = refreshRecord({ tokenHash: fakeHash("drop-fresh"), consumedAt: T0 + 9, replay: sealed("drop-fresh") });
      const bare = refreshRecord({ tokenHash: fakeHash("drop-bare"), consumedAt: T0 + 2 });
      const live = refreshRecord({ tokenHash: fakeHash("drop-live") });
      for (const r of [...old, fresh, bare, live]) await store.create(r);
      const counts: number[] = [];
      do counts.push(await dropReplays(T0 + 7, 3));
      while (counts.at(-1) === 3);
      expect(counts).toEqual([3, 3, 1]);
      expect(await dropReplays(T0 + 7, 3), "nothing left").toBe(0);
      for (const r of old) expectRecord(await store.findByHash(r.tokenHash), { ...r, replay: null }, `${r.tokenHash} (its replay dropped, the rest kept)`);
      expectRecord(await store.findByHash(fresh.tokenHash), fresh, "rotated after the instant");
      expectRecord(await store.findByHash(bare.tokenHash), bare, "rotated without a replay");
      expectRecord(await store.findByHash(live.tokenHash), live, "not rotated");
      expect(await store.graceUse(old[6]!.tokenHash, T0, 10), "a dropped replay answers no grace use").toBeNull();
      expect((await store.graceUse(fresh.tokenHash, T0, 10))?.replay).toBe(sealed("drop-fresh"));
      await expect(dropReplays(T0, 0)).rejects.toThrow(TypeError);

      // Two callers at once: each replay dropped once, the counts add up.
      const more = Array.from({ length: 20 }, (_, i) => refreshRecord({ tokenHash: fakeHash(`drop-more-${i}`), familyId: "family-more", consumedAt: T0 + 100 + i, replay: sealed(`more-${i}`) }));
      for (const r of more) await store.create(r);
      const drained = await inParallel(2, async () => {
        let n = 0;
        let got: number;
        do {
          got = await dropReplays(T0 + 200, 4);
          n += got;
        } while (got > 0);
        return n;
      });
      // The 20 and the one rotated at T0+9, now before the instant too.
      expect(drained[0]! + drained[1]!).toBe(21);
      for (const r of [...more, fresh]) expect((await store.findByHash(r.tokenHash))?.replay, r.tokenHash).toBeNull();
    });

    it("consume stores the replay data exactly with the consumption; without it, replay stays null", async () => {
      const a = refreshRecord({ tokenHash: fakeHash("a") });
      const b = refreshRecord({ tokenHash: fakeHash("b"), familyId: "family-2" });
      const nextA = refreshRecord({ tokenHash: fakeHash("a-next") });
      const nextB = refreshRecord({ tokenHash: fakeHash("b-next"), familyId: "family-2" });
      await tokens().create(a);
      await tokens().create(b);
      expect(await tokens().consume(a.tokenHash, T0 + 5, nextA, sealed("a"))).toBe(true);
      expect(await tokens().consume(b.tokenHash, T0 + 6, nextB)).toBe(true);
      expectRecord(await tokens().findByHash(a.tokenHash), { ...a, consumedAt: T0 + 5, replay: sealed("a") }, "consumed with replay");
      expectRecord(await tokens().findByHash(b.tokenHash), { ...b, consumedAt: T0 + 6 }, "consumed without replay");
      expectRecord(await tokens().findByHash(nextA.tokenHash), nextA, "replacement");
      // A losing consume leaves the winner's replay data alone.
      expect(await tokens().consume(a.tokenHash, T0 + 7, refreshRecord({ tokenHash: fakeHash("a-late") }), sealed("late"))).toBe(false);
      expect((await tokens().findByHash(a.tokenHash))!.replay).toBe(sealed("a"));
    });

    it("a losing consume of a token consumed without replay data changes nothing: replay stays null, so no grace use replays the loser's answer", async () => {
      const t = refreshRecord();
      await tokens().create(t);
      expect(await tokens().consume(t.tokenHash, T0 + 10, refreshRecord({ tokenHash: fakeHash("won") }))).toBe(true);
      expect(await tokens().consume(t.tokenHash, T0 + 20, refreshRecord({ tokenHash: fakeHash("lost") }), sealed("lost"))).toBe(false);
      expectRecord(await tokens().findByHash(t.tokenHash), { ...t, consumedAt: T0 + 10 }, "the winner's consumption, without replay data");
      expect(await tokens().findByHash(fakeHash("lost")), "the loser's replacement").toBeNull();
      expect(await tokens().graceUse(t.tokenHash, T0, 10)).toBeNull();
    });

    it("graceUse counts one use and returns the record after it; refuses past maxUses", async () => {
      const t = refreshRecord();
      await tokens().create(t);
      await tokens().consume(t.tokenHash, T0 + 10, refreshRecord({ tokenHash: fakeHash("next") }), sealed("t"));
      const consumed = { ...t, consumedAt: T0 + 10, replay: sealed("t") };
      expectRecord(await tokens().graceUse(t.tokenHash, T0 + 9, 2), { ...consumed, graceUses: 1 }, "first grace use");
      expectRecord(await tokens().graceUse(t.tokenHash, T0 + 9, 2), { ...consumed, graceUses: 2 }, "second grace use");
      expect(await tokens().graceUse(t.tokenHash, T0 + 9, 2), "past maxUses").toBeNull();
      expectRecord(await tokens().graceUse(t.tokenHash, T0 + 9, 3), { ...consumed, graceUses: 3 }, "a larger bound allows one more");
      expectRecord(await tokens().findByHash(t.tokenHash), { ...consumed, graceUses: 3 }, "stored");
    });

    it("graceUse refuses, changing nothing: unknown, never consumed, consumed at or before consumedAfter, revoked, or without replay data", async () => {
      const fresh = refreshRecord({ tokenHash: fakeHash("fresh") });
      const old = refreshRecord({ tokenHash: fakeHash("old"), consumedAt: T0, replay: sealed("old") });
      const revoked = refreshRecord({ tokenHash: fakeHash("revoked"), consumedAt: T0 + 5, revokedAt: T0 + 6, replay: sealed("revoked") });
      const bare = refreshRecord({ tokenHash: fakeHash("bare"), consumedAt: T0 + 5 });
      for (const r of [fresh, old, revoked, bare]) await tokens().create(r);
      expect(await tokens().graceUse(fakeHash("unknown"), T0 - WINDOW, 10)).toBeNull();
      expect(await tokens().graceUse(fresh.tokenHash, T0 - WINDOW, 10)).toBeNull();
      expect(await tokens().graceUse(old.tokenHash, T0, 10), "consumedAt == consumedAfter is outside the window").toBeNull();
      expect(await tokens().graceUse(revoked.tokenHash, T0, 10)).toBeNull();
      expect(await tokens().graceUse(bare.tokenHash, T0, 10)).toBeNull();
      for (const r of [fresh, old, revoked, bare]) expectRecord(await tokens().findByHash(r.tokenHash), r, r.tokenHash.slice(0, 6));
      expectRecord(await tokens().graceUse(old.tokenHash, T0 - 1, 10), { ...old, graceUses: 1 }, "just inside the window");
    });

    it("50 concurrent presentations of one token within the window all get a pair of one family: one consume wins, 49 grace uses replay its answer, the family survives", async () => {
      const original = refreshRecord();
      await tokens().create(original);
      const replacements = Array.from({ length: 50 }, (_, i) => refreshRecord({ tokenHash: fakeHash(`r-${i}`), createdAt: T0 + 100 }));
      const now = T0 + 100;
      const outcomes = await inParallel(50, async (i) => {
        if (await tokens().consume(original.tokenHash, now, replacements[i]!, sealed(`answer-${i}`))) return { won: i, replay: sealed(`answer-${i}`) };
        const used = await tokens().graceUse(original.tokenHash, now - WINDOW, 49);
        return { won: null, replay: used?.replay ?? null, family: used?.familyId, revokedAt: used?.revokedAt };
      });
      const winners = outcomes.flatMap((o) => (o.won === null ? [] : [o.won]));
      expect(winners, "exactly one consume wins").toHaveLength(1);
      const w = winners[0]!;
      for (const o of outcomes.filter((x) => x.won === null)) expect(o).toEqual({ won: null, replay: sealed(`answer-${w}`), family: "family-1", revokedAt: null });
      const stored = [];
      for (const [i, r] of replacements.entries()) if ((await tokens().findByHash(r.tokenHash)) !== null) stored.push(i);
      expect(stored, "only the winner's replacement is stored").toEqual([w]);
      expectRecord(await tokens().findByHash(replacements[w]!.tokenHash), replacements[w]!, "the family's live token");
      expectRecord(
        await tokens().findByHash(original.tokenHash),
        { ...original, consumedAt: now, replay: sealed(`answer-${w}`), graceUses: 49 },
        "consumed original",
      );
    }, RACE_TIMEOUT);

    it("50 concurrent grace uses with maxUses 10: exactly 10 get the record, and the count is exact", async () => {
      const t = refreshRecord({ consumedAt: T0, replay: sealed("t") });
      await tokens().create(t);
      const results = await inParallel(50, () => tokens().graceUse(t.tokenHash, T0 - 1, 10));
      const granted = results.filter((r) => r !== null);
      expect(granted).toHaveLength(10);
      expect(granted.map((r) => r!.graceUses).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      expectRecord(await tokens().findByHash(t.tokenHash), { ...t, graceUses: 10 }, "stored");
    }, RACE_TIMEOUT);

    it("a revoked family stays revoked under concurrent grace uses (and revocations racing them)", async () => {
      const old = refreshRecord({ consumedAt: T0, replay: sealed("old") });
      const live = refreshRecord({ tokenHash: fakeHash("live"), createdAt: T0 });
      await tokens().create(old);
      await tokens().create(live);
      await tokens().revokeFamily("family-1", T0 + 1);
      const after = await inParallel(50, () => tokens().graceUse(old.tokenHash, T0 - 1, 100));
      expect(after.filter((r) => r !== null), "no grace use of a revoked token").toEqual([]);
      expectRecord(await tokens().findByHash(old.tokenHash), { ...old, revokedAt: T0 + 1 }, "revoked, no use counted");
      expectRecord(await tokens().findByHash(live.tokenHash), { ...live, revokedAt: T0 + 1 }, "the live token stays revoked");

      // Racing: a grace use that wins the row before the revocation saw it unrevoked; none after.
      const racing = refreshRecord({ tokenHash: fakeHash("racing"), familyId: "family-2", consumedAt: T0, replay: sealed("racing") });
      await tokens().create(racing);
      const raced = await inParallel(41, (i) => (i === 20 ? tokens().revokeFamily("family-2", T0 + 2).then(() => null) : tokens().graceUse(racing.tokenHash, T0 - 1, 100)));
      for (const r of raced) if (r !== null) expect(r.revokedAt).toBeNull();
      const final = (await tokens().findByHash(racing.tokenHash))!;
      expect(final.revokedAt).toBe(T0 + 2);
      expect(final.graceUses).toBe(raced.filter((r) => r !== null).length);
      expect(await tokens().graceUse(racing.tokenHash, T0 - 1, 100)).toBeNull();
    }, RACE_TIMEOUT);
  });

  describe("refresh grace window through the core", () => {
    it("50 concurrent refreshes of one token: all 200 with one answer; its refresh token works once more; the family survives", async () => {
      const b = await boot(s.storage(), { refreshGraceMaxUses: 49 });
      const { refresh } = await passwordGrant(b);
      const results = await inParallel(50, () => refreshGrant(b, refresh));
      const bodies = results.map((r, i) => ok(b, r, `refresh ${i}`));
      for (const body of bodies) expect(body).toEqual(bodies[0]);
      const next = bodies[0]!.refresh_token as string;
      expect((await s.storage().refreshTokens.findByHash(await refreshTokenKey(sha256, next)))).toMatchObject({ consumedAt: null, revokedAt: null });
      const again = ok(b, await refreshGrant(b, next), "the replayed refresh token");
      ok(b, await refreshGrant(b, again.refresh_token as string), "and its successor");
    }, RACE_TIMEOUT);

    it("after the window one presentation of a rotated token revokes the family; the newest token is refused too", async () => {
      const b = await boot(s.storage());
      const { refresh } = await passwordGrant(b);
      const next = ok(b, await refreshGrant(b, refresh), "refresh").refresh_token as string;
      b.advance(WINDOW);
      const reuse = await refreshGrant(b, refresh);
      expect({ status: reuse.status, body: reuse.body }).toEqual({ status: 400, body: INVALID_GRANT });
      const newest = await refreshGrant(b, next);
      expect({ status: newest.status, body: newest.body }).toEqual({ status: 400, body: INVALID_GRANT });
      expect((await s.storage().refreshTokens.findByHash(await refreshTokenKey(sha256, next)))?.revokedAt).toBe(T0 + WINDOW);
    });

    it("a family revoked by RFC 7009 stays revoked under 20 concurrent grace uses", async () => {
      const b = await boot(s.storage());
      const { refresh } = await passwordGrant(b);
      const next = ok(b, await refreshGrant(b, refresh), "refresh").refresh_token as string;
      const res = await b.app.fetch(
        new Request("https://conformance.plantgate.test/UserService/connect/revocation", {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            authorization: "Basic " + btoa(`conformance-client:${encodeURIComponent(b.clientSecret)}`),
          },
          body: new URLSearchParams({ token: next }).toString(),
        }),
      );
      expect(res.status).toBe(200);
      const results = await inParallel(20, () => refreshGrant(b, refresh));
      for (const r of results) expect({ status: r.status, body: r.body }).toEqual({ status: 400, body: INVALID_GRANT });
      const newest = await refreshGrant(b, next);
      expect({ status: newest.status, body: newest.body }).toEqual({ status: 400, body: INVALID_GRANT });
      expect((await s.storage().refreshTokens.findByHash(await refreshTokenKey(sha256, refresh)))?.graceUses).toBe(0);
    }, RACE_TIMEOUT);
  });
}
