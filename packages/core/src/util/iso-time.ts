/** Epoch milliseconds as ISO 8601 text, for every view of a stored time. */

const pad2 = (n: number) => (n < 10 ? "0" : "") + n;
const pad3 = (n: number) => (n < 10 ? "00" : n < 100 ? "0" : "") + n;

/** The range of a Date: 100 000 000 days either side of the epoch. */
const DATE_LIMIT_MS = 8.64e15;

/**
 * `new Date(ms).toISOString()`, computed with integer arithmetic (civil-from-days, H. Hinnant)
 * for years 1970-9999: a page of 20 accounts spent more on Date#toISOString than on everything
 * else. Other values go through Date, and it never throws: a time past what a Date holds
 * (+-8.64e15 ms: a row written by hand, a `clock` that answered one) is shown as the end of that
 * range (`+275760-09-13T00:00:00.000Z`), and one that is no number at all as the epoch. Until
 * 2026-12-03 such a time was a RangeError: a 500 for every GetAccountList page holding that
 * account, and `admin.listAccounts`, the CLI's lists and the console's views failed whole.
 *
 * @example
 * isoTimestamp(951_782_400_000); // "2000-02-29T00:00:00.000Z"
 * isoTimestamp(9e15); // "+275760-09-13T00:00:00.000Z"
 */
export function isoTimestamp(ms: number): string {
  if (!Number.isInteger(ms) || ms < 0 || ms >= 253402300800000) {
    const t = typeof ms === "number" && !Number.isNaN(ms) ? Math.min(DATE_LIMIT_MS, Math.max(-DATE_LIMIT_MS, ms)) : 0;
    return new Date(t).toISOString();
  }
  const days = Math.floor(ms / 86400000);
  const inDay = ms - days * 86400000;
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const h = Math.floor(inDay / 3600000);
  const m = Math.floor((inDay % 3600000) / 60000);
  const sec = Math.floor((inDay % 60000) / 1000);
  return `${year}-${pad2(month)}-${pad2(day)}T${pad2(h)}:${pad2(m)}:${pad2(sec)}.${pad3(inDay % 1000)}Z`;
}
