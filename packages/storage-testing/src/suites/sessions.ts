import type { SessionRecord } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { DAY, expectRecord, fakeHash, MAX_DATE_MS, sessionRecord, T0 } from "../fixtures.js";
import type { SuiteContext } from "../target.js";

export function sessionsSuite(s: SuiteContext): void {
  describe("sessions", () => {
    const sessions = () => s.storage().sessions;
    const create = async (...records: SessionRecord[]) => {
      for (const r of records) expect(await sessions().create(structuredClone(r)), `create ${r.idHash.slice(0, 6)}`).toBe(true);
    };
    const expectStored = async (...records: SessionRecord[]) => {
      for (const r of records) expectRecord(await sessions().get(r.idHash), r, `session ${r.idHash.slice(0, 6)}`);
    };
    const expectAbsent = async (...records: SessionRecord[]) => {
      for (const r of records) expect(await sessions().get(r.idHash), `session ${r.idHash.slice(0, 6)} should be absent`).toBeNull();
    };

    it("get returns null for an unknown hash", async () => {
      expect(await sessions().get(fakeHash("unknown"))).toBeNull();
    });

    it("create returns true and get round-trips exactly (epoch ms beyond 32 bits)", async () => {
      const a = sessionRecord();
      const b = sessionRecord({ idHash: fakeHash("session-2"), accountId: "acct-2", createdAt: MAX_DATE_MS - 1, expiresAt: MAX_DATE_MS });
      await create(a, b);
      await expectStored(a, b);
    });

    it("create returns false for an existing hash and leaves the first session unchanged", async () => {
      const first = sessionRecord();
      await create(first);
      expect(await sessions().create(sessionRecord({ accountId: "acct-2", csrfHash: fakeHash("other"), createdAt: T0 + 1, expiresAt: T0 + 2 * DAY }))).toBe(false);
      await expectStored(first);
    });

    it("hashes are exact and case-sensitive", async () => {
      const lower = sessionRecord({ idHash: "abcdefghijklmnopqrstuvwxyz0123456789-_ABCDE" });
      await create(lower);
      expect(await sessions().get("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_abcde")).toBeNull();
      expect(await sessions().get("abcdefghijklmnopqrstuvwxyz0123456789-_ABCDe")).toBeNull();
      expect(await sessions().delete("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_abcde")).toBe(false);
      await expectStored(lower);
    });

    it("delete removes the session and returns true; again, or for an unknown hash, false", async () => {
      const gone = sessionRecord({ idHash: fakeHash("gone") });
      const kept = sessionRecord({ idHash: fakeHash("kept") });
      await create(gone, kept);
      expect(await sessions().delete(gone.idHash)).toBe(true);
      await expectAbsent(gone);
      await expectStored(kept);
      expect(await sessions().delete(gone.idHash)).toBe(false);
      expect(await sessions().delete(fakeHash("never"))).toBe(false);
      await expectStored(kept);
    });

    it("deleteByAccount removes every session of that account only, and returns how many", async () => {
      const mine = [sessionRecord({ idHash: fakeHash("m1") }), sessionRecord({ idHash: fakeHash("m2"), expiresAt: T0 - 1 })];
      const others = [
        sessionRecord({ idHash: fakeHash("o1"), accountId: "acct-10" }), // a prefix match would hit it
        sessionRecord({ idHash: fakeHash("o2"), accountId: "ACCT-1" }),
        sessionRecord({ idHash: fakeHash("o3"), accountId: "acct-2" }),
      ];
      await create(...mine, ...others);
      expect(await sessions().deleteByAccount("acct-1")).toBe(2);
      await expectAbsent(...mine);
      await expectStored(...others);
      expect(await sessions().deleteByAccount("acct-1"), "a second run deletes nothing").toBe(0);
      expect(await sessions().deleteByAccount("acct-none")).toBe(0);
      await expectStored(...others);
    });

    it("deleteExpired deletes exactly the sessions with expiresAt <= now, and returns how many", async () => {
      const now = T0 + 10 * DAY;
      const session = (label: string, expiresAt: number) => sessionRecord({ idHash: fakeHash(label), expiresAt });
      const gone = [session("long-ago", T0), session("1-ms-before", now - 1), session("at-now", now)];
      const kept = [session("1-ms-after", now + 1), session("far-future", MAX_DATE_MS)];
      await create(...gone, ...kept);
      expect(await sessions().deleteExpired(now)).toBe(gone.length);
      await expectAbsent(...gone);
      await expectStored(...kept);
      expect(await sessions().deleteExpired(now), "a second run deletes nothing").toBe(0);
    });

    it("deleteExpired on an empty store returns 0", async () => {
      expect(await sessions().deleteExpired(MAX_DATE_MS)).toBe(0);
    });

    it("a deleted session's hash can be created again", async () => {
      const first = sessionRecord();
      await create(first);
      expect(await sessions().delete(first.idHash)).toBe(true);
      const again = sessionRecord({ accountId: "acct-2", createdAt: T0 + 5 });
      await create(again);
      await expectStored(again);
    });

    const touch = (idHash: string, expiresAt: number) => {
      const store = sessions();
      if (typeof store.touch !== "function") throw new Error("sessions.touch is missing: without it the console's idle timeout cannot run (see the README's storage section)");
      return store.touch(idHash, expiresAt);
    };

    it("touch moves expiresAt forward only: true when it moved; an equal or earlier end changes nothing and returns false; no other field or session changes", async () => {
      const a = sessionRecord({ idHash: fakeHash("touched"), expiresAt: T0 + DAY });
      const b = sessionRecord({ idHash: fakeHash("beside"), accountId: "acct-2", expiresAt: T0 + DAY });
      await create(a, b);
      expect(await touch(a.idHash, T0 + DAY + 1), "1 ms later").toBe(true);
      await expectStored({ ...a, expiresAt: T0 + DAY + 1 }, b);
      expect(await touch(a.idHash, MAX_DATE_MS), "to the latest Date (beyond 32 bits)").toBe(true);
      await expectStored({ ...a, expiresAt: MAX_DATE_MS }, b);
      expect(await touch(a.idHash, MAX_DATE_MS), "the same end").toBe(false);
      expect(await touch(a.idHash, T0 + 2 * DAY), "an earlier end").toBe(false);
      await expectStored({ ...a, expiresAt: MAX_DATE_MS }, b);
    });

    it("touch never creates a session: an unknown hash, a deleted one and one swept by deleteExpired stay absent, and it returns false", async () => {
      expect(await touch(fakeHash("never"), T0 + DAY)).toBe(false);
      const signedOut = sessionRecord({ idHash: fakeHash("signed-out") });
      const swept = sessionRecord({ idHash: fakeHash("swept"), expiresAt: T0 });
      await create(signedOut, swept);
      expect(await sessions().delete(signedOut.idHash)).toBe(true);
      expect(await sessions().deleteExpired(T0)).toBe(1);
      expect(await touch(signedOut.idHash, T0 + 2 * DAY)).toBe(false);
      expect(await touch(swept.idHash, T0 + 2 * DAY)).toBe(false);
      await expectAbsent(signedOut, swept, sessionRecord({ idHash: fakeHash("never") }));
      expect(await sessions().deleteExpired(MAX_DATE_MS), "nothing was made").toBe(0);
    });

    it("touch hashes are exact: a differently cased hash moves nothing", async () => {
      const lower = sessionRecord({ idHash: "abcdefghijklmnopqrstuvwxyz0123456789-_ABCDE" });
      await create(lower);
      expect(await touch("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_abcde", T0 + 2 * DAY)).toBe(false);
      await expectStored(lower);
    });

    it("deleteExpired goes by the end touch moved to: a touched session outlives its first end, and is swept at its new one", async () => {
      const a = sessionRecord({ idHash: fakeHash("slid"), expiresAt: T0 + 1000 });
      await create(a);
      expect(await touch(a.idHash, T0 + 5000)).toBe(true);
      expect(await sessions().deleteExpired(T0 + 1000)).toBe(0);
      expect(await sessions().deleteExpired(T0 + 4999)).toBe(0);
      await expectStored({ ...a, expiresAt: T0 + 5000 });
      expect(await sessions().deleteExpired(T0 + 5000)).toBe(1);
      await expectAbsent(a);
    });

    it("stores copies: mutating the record passed to create, or one returned, changes nothing stored", async () => {
      const input = sessionRecord();
      const expected = structuredClone(input);
      await sessions().create(input);
      input.accountId = "mutated";
      input.expiresAt = 0;
      (await sessions().get(expected.idHash))!.csrfHash = "mutated";
      await expectStored(expected);
    });
  });
}
