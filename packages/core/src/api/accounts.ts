import { ApiError, ApiErrorCode } from "../errors/index.js";
import { json } from "../http/respond.js";
import type { Context } from "../options.js";
import type { AccountRecord } from "../storage/types.js";

/** An account as the API shows it: never a password or its hash. */
export interface AccountView {
  id: string;
  username: string;
  displayName: string | null;
  email: string | null;
  roles: string[];
  enabled: boolean;
  /** ISO 8601. */
  createdAt: string;
}

/** The body of GetAccountList. */
export interface AccountPage {
  accounts: AccountView[];
  page: number;
  pageSize: number;
  total: number;
  totalPages: number;
}

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

const MAX_PAGE = 2_147_483_647;

function intParam(params: URLSearchParams, name: string, fallback: number, max: number, code: 1101 | 1102): number {
  const all = params.getAll(name);
  if (all.length > 1) throw new ApiError(400, ApiErrorCode.repeatedParameter, `${name} must be given at most once.`);
  const raw = all[0];
  if (raw === undefined) return fallback;
  const message = `${name} must be an integer from 1 to ${max}.`;
  if (!/^[1-9]\d{0,9}$/.test(raw)) throw new ApiError(400, code, message);
  const n = Number(raw);
  if (n > max) throw new ApiError(400, code, message);
  return n;
}

/** `GET /rbac/ServerCommand/GetAccountList?page=&pageSize=`: the bearer check has already passed. */
export async function listAccounts(ctx: Context, url: URL): Promise<Response> {
  const page = intParam(url.searchParams, "page", 1, MAX_PAGE, ApiErrorCode.invalidPage);
  const pageSize = intParam(url.searchParams, "pageSize", ctx.defaultPageSize, ctx.maxPageSize, ApiErrorCode.invalidPageSize);
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
