import type * as z from "zod/mini";
import { json, type PlainResponse } from "../http/respond.js";
import type { Context } from "../context.js";
import { AccountPageSchema, AccountViewSchema, parseAccountListQuery } from "../schemas/accounts.js";
import type { AccountRecord } from "../storage/types.js";
import { isoTimestamp } from "../util/iso-time.js";

export { isoTimestamp };

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
