import type { z } from "zod";
import { json, type PlainResponse } from "../http/respond.js";
import type { Context } from "../options.js";
import { accountListQuery, AccountPageSchema, AccountViewSchema, parseAccountListQuery, type AccountListQuery } from "../schemas/accounts.js";
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
    createdAt: new Date(a.createdAt).toISOString(),
  };
}

const queries = new WeakMap<Context, AccountListQuery>();

/** The query schema for this app's page-size settings (the OpenAPI document is built from the same settings). */
function querySchema(ctx: Context): AccountListQuery {
  let schema = queries.get(ctx);
  if (!schema) queries.set(ctx, (schema = accountListQuery(ctx)));
  return schema;
}

/** `GET /rbac/ServerCommand/GetAccountList?page=&pageSize=`: the bearer check has already passed. */
export async function listAccounts(ctx: Context, url: URL): Promise<PlainResponse> {
  const { page, pageSize } = parseAccountListQuery(querySchema(ctx), url.searchParams);
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
