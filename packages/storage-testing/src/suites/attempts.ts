import type { AttemptRecord } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { attemptKey, expectRecord, MAX_DATE_MS, T0 } from "../fixtures.js";
import type { SuiteContext } from "../target.js";

const WINDOW = 15 * 60 * 1000;

export function attemptsSuite(s: SuiteContext): void {
  describe("attempts", () => {
    const attempts = () => s.storage().attempts;
    const record = (key: string, count: number, windowStart: number): AttemptRecord => ({ key, count, windowStart });

    it("get returns null for an unknown key", async () => {
      expect(await attempts().get(attemptKey("unknown"))).toBeNull();
    });

    it("the first increment opens a window at `now` with count 1, and returns it; get reads the same", async () => {
      const key = attemptKey("user");
      expectRecord(await attempts().increment(key, T0, WINDOW), record(key, 1, T0), "after the first increment");
      expectRecord(await attempts().get(key), record(key, 1, T0), "stored counter");
    });

    it("increments inside the window grow the count by one each and keep windowStart", async () => {
      const key = attemptKey("user");
      for (let i = 1; i <= 5; i++) {
        expectRecord(await attempts().increment(key, T0 + (i - 1) * 1000, WINDOW), record(key, i, T0), `increment ${i}`);
      }
      expectRecord(await attempts().get(key), record(key, 5, T0), "stored counter");
    });

    it("a window that started at or before now - windowMs is over: the next failure opens a new one", async () => {
      const key = attemptKey("user");
      await attempts().increment(key, T0, WINDOW);
      expectRecord(await attempts().increment(key, T0 + WINDOW - 1, WINDOW), record(key, 2, T0), "1 ms before the window ends");
      expectRecord(await attempts().increment(key, T0 + WINDOW, WINDOW), record(key, 1, T0 + WINDOW), "exactly when the window ends");
      expectRecord(await attempts().increment(key, T0 + WINDOW + 1, WINDOW), record(key, 2, T0 + WINDOW), "inside the new window");
      expectRecord(await attempts().increment(key, T0 + 10 * WINDOW, WINDOW), record(key, 1, T0 + 10 * WINDOW), "long after");
      expectRecord(await attempts().get(key), record(key, 1, T0 + 10 * WINDOW), "stored counter");
    });

    it("a failure timed before the window's start (another instance's clock behind) counts in that window: it does not open a new one", async () => {
      // Nine failures on one instance, then one on another whose clock is 500 ms behind: one window, ten failures.
      const key = attemptKey("skewed");
      for (let i = 0; i < 9; i++) await attempts().increment(key, T0 + 1000 + i, WINDOW);
      expectRecord(await attempts().increment(key, T0 + 1009 - 500, WINDOW), record(key, 10, T0 + 1000), "the tenth failure of the window");
      expectRecord(await attempts().get(key), record(key, 10, T0 + 1000), "stored counter");
    });

    it("the window length is the caller's: the same counter, read with a shorter window, restarts", async () => {
      const key = attemptKey("user");
      await attempts().increment(key, T0, WINDOW);
      await attempts().increment(key, T0 + 1000, WINDOW);
      expectRecord(await attempts().increment(key, T0 + 2000, 2000), record(key, 1, T0 + 2000));
    });

    it("keys are independent, exact and case-sensitive; 64-character keys work", async () => {
      const long = `${"k".repeat(20)}:${"A".repeat(43)}`;
      expect(long).toHaveLength(64);
      const lower = "ip:abcdefghijklmnopqrstuvwxyz0123456789-_ABCDE";
      const upper = "ip:ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_abcde";
      await attempts().increment(long, T0, WINDOW);
      await attempts().increment(long, T0 + 1, WINDOW);
      await attempts().increment(lower, T0 + 2, WINDOW);
      expectRecord(await attempts().get(long), record(long, 2, T0));
      expectRecord(await attempts().get(lower), record(lower, 1, T0 + 2));
      expect(await attempts().get(upper)).toBeNull();
      expect(await attempts().get(long.slice(0, 63))).toBeNull();
      expect(await attempts().get(`${lower} `)).toBeNull();
    });

    it("epoch milliseconds beyond 32 bits round-trip", async () => {
      const key = attemptKey("far");
      expectRecord(await attempts().increment(key, MAX_DATE_MS - 1, WINDOW), record(key, 1, MAX_DATE_MS - 1));
      expectRecord(await attempts().increment(key, MAX_DATE_MS, WINDOW), record(key, 2, MAX_DATE_MS - 1));
    });

    it("reset forgets the key (the next failure starts again at 1) and leaves others; an unknown key is no error", async () => {
      const a = attemptKey("a");
      const b = attemptKey("b");
      await attempts().increment(a, T0, WINDOW);
      await attempts().increment(a, T0 + 1, WINDOW);
      await attempts().increment(b, T0, WINDOW);
      await attempts().reset(a);
      expect(await attempts().get(a)).toBeNull();
      expectRecord(await attempts().get(b), record(b, 1, T0), "the other counter");
      await attempts().reset(a);
      await attempts().reset(attemptKey("never"));
      expectRecord(await attempts().increment(a, T0 + 2, WINDOW), record(a, 1, T0 + 2), "after reset");
    });

    // A success on a budget shared across usernames gives back its own count only.
    const refund = (key: string, windowStart: number, count = 1) => {
      const store = attempts();
      if (typeof store.refund !== "function") throw new Error("attempts.refund is missing: without it a success resets a budget shared across usernames (see the README's storage section)");
      return store.refund(key, windowStart, count);
    };

    it("refund takes back one count of the window it names, deletes a record it leaves at 0, and leaves other keys", async () => {
      const a = attemptKey("budget");
      const b = attemptKey("other");
      await attempts().increment(a, T0, WINDOW);
      await attempts().increment(a, T0 + 1, WINDOW);
      await attempts().increment(a, T0 + 2, WINDOW);
      await attempts().increment(b, T0, WINDOW);
      await refund(a, T0);
      expectRecord(await attempts().get(a), record(a, 2, T0), "after one refund");
      await refund(a, T0);
      expectRecord(await attempts().get(a), record(a, 1, T0), "after two");
      await refund(a, T0);
      expect(await attempts().get(a), "refunded to 0: deleted, as reset would").toBeNull();
      await refund(a, T0);
      expect(await attempts().get(a), "a refund of an absent key adds nothing").toBeNull();
      expectRecord(await attempts().get(b), record(b, 1, T0), "the other counter");
      expectRecord(await attempts().increment(a, T0 + 3, WINDOW), record(a, 1, T0 + 3), "the next failure opens a new window");
      await refund(attemptKey("never"), T0);
      expect(await attempts().get(attemptKey("never")), "an unknown key is no error and adds no record").toBeNull();
    });

    it("refund takes back `count` counts at once, never below 0: a record it would take below 0 is deleted", async () => {
      const a = attemptKey("budget");
      for (let i = 0; i < 7; i++) await attempts().increment(a, T0 + i, WINDOW);
      await refund(a, T0, 3);
      expectRecord(await attempts().get(a), record(a, 4, T0), "7 - 3");
      await refund(a, T0, 4);
      expect(await attempts().get(a), "4 - 4: deleted").toBeNull();
      for (let i = 0; i < 2; i++) await attempts().increment(a, T0 + 10 + i, WINDOW);
      await refund(a, T0 + 10, 5);
      expect(await attempts().get(a), "2 - 5: deleted, not negative").toBeNull();
      expectRecord(await attempts().increment(a, T0 + 20, WINDOW), record(a, 1, T0 + 20), "the next failure starts again at 1");
      await refund(a, T0 + 20, 10);
      await refund(a, T0 + 20, 10);
      expect(await attempts().get(a)).toBeNull();
    });

    it("refund of another window changes nothing: a count of a window that has since ended is not taken from the new one", async () => {
      const key = attemptKey("budget");
      await attempts().increment(key, T0, WINDOW);
      await attempts().increment(key, T0 + 1, WINDOW);
      await refund(key, T0 + 1);
      await refund(key, T0 - 1);
      expectRecord(await attempts().get(key), record(key, 2, T0), "another windowStart");
      await attempts().increment(key, T0 + WINDOW, WINDOW);
      await attempts().increment(key, T0 + WINDOW + 1, WINDOW);
      await refund(key, T0);
      expectRecord(await attempts().get(key), record(key, 2, T0 + WINDOW), "the old window's refund after a new window opened");
      await refund(key, MAX_DATE_MS);
      expectRecord(await attempts().get(key), record(key, 2, T0 + WINDOW), "a window in the far future");
      await refund(key, T0 + WINDOW);
      expectRecord(await attempts().get(key), record(key, 1, T0 + WINDOW), "the new window's own refund");
    });

    it("deleteExpired deletes exactly the counters whose window started at or before `before`, and returns how many", async () => {
      const before = T0 + 10 * WINDOW;
      const gone = [attemptKey("long-ago"), attemptKey("1-ms-before"), attemptKey("at-before")];
      const kept = [attemptKey("1-ms-after"), attemptKey("far-future")];
      await attempts().increment(gone[0]!, T0, WINDOW);
      await attempts().increment(gone[1]!, before - 1, WINDOW);
      await attempts().increment(gone[2]!, before, WINDOW);
      await attempts().increment(gone[2]!, before + 5, WINDOW); // a second failure keeps its windowStart
      await attempts().increment(kept[0]!, before + 1, WINDOW);
      await attempts().increment(kept[1]!, MAX_DATE_MS, WINDOW);
      expect(await attempts().deleteExpired(before)).toBe(gone.length);
      for (const key of gone) expect(await attempts().get(key), key).toBeNull();
      expectRecord(await attempts().get(kept[0]!), record(kept[0]!, 1, before + 1));
      expectRecord(await attempts().get(kept[1]!), record(kept[1]!, 1, MAX_DATE_MS));
      expect(await attempts().deleteExpired(before), "a second run deletes nothing").toBe(0);
    });

    it("deleteExpired on a store without counters returns 0", async () => {
      expect(await attempts().deleteExpired(MAX_DATE_MS)).toBe(0);
    });

    it("returns copies: mutating a returned record changes nothing stored", async () => {
      const key = attemptKey("iso");
      const returned = await attempts().increment(key, T0, WINDOW);
      returned.count = 99;
      returned.windowStart = 0;
      (await attempts().get(key))!.count = 42;
      expectRecord(await attempts().get(key), record(key, 1, T0));
      expectRecord(await attempts().increment(key, T0 + 1, WINDOW), record(key, 2, T0));
    });
  });
}
