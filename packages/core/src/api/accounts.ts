import type * as z from "zod/mini";
import { json, type PlainResponse } from "../http/respond.js";
import type { Context } from "../context.js";
import { AccountPageSchema, AccountViewSchema, parseAccountListQuery } from "../schemas/accounts.js";
import type { AccountRecord } from "../storage/types.js";

/** An account as the API shows it: never a password or its hash. */
export type AccountView = z.output<typeof AccountViewSchema>;

/** The body of GetAccountList. */
export type AccountPage = z.output<typeof AccountPageSchema>;

/** Projects a stored account to its public view. */
export function accountView(a: AccountRecord): AccountView {
  return {
    id: a.id,
    username: a.username,
    displayName: a.displayName,
    email: a.email,
    roles: [...a.roles],
    enabled: a.enabled,
    createdAt: isoTimestamp(a.createdAt),
  };
}

const pad2 = (n: number) => (n < 10 ? "0" : "") + n;
const pad3 = (n: number) => (n < 10 ? "00" : n < 100 ? "0" : "") + n;

/**
 * `new Date(ms).toISOString()`, computed with integer arithmetic (civil-from-days, H. Hinnant)
 * for years 1970-9999: a page of 20 accounts spent more on Date#toISOString than on everything
 * else. Other values go through Date.
 */
export function isoTimestamp(ms: number): string {
  if (!Number.isInteger(ms) || ms < 0 || ms >= 253402300800000) return new Date(ms).toISOString();
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

/** `GET /rbac/ServerCommand/GetAccountList?page=&pageSize=`: the bearer check has already passed. */
export async function listAccounts(ctx: Context, query: URLSearchParams): Promise<PlainResponse> {
  const { page, pageSize } = parseAccountListQuery(ctx.accountListQuery, query);
  const { items, total } = await ctx.storage.accounts.list((page - 1) * pageSize, pageSize);
  const body: AccountPage = {
    accounts: items.map(accountView),
    page,
    pageSize,
    total,
    totalPages: Math.ceil(total / pageSize),
  };
  return json(200, body, { "cache-control": "no-store" });
}
