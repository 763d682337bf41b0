import * as z from "zod/mini";
import { ApiError, ApiErrorCode } from "../errors/index.js";
import { meta } from "./meta.js";

/** An account as the API shows it: never a password or its hash. */
export const AccountViewSchema = meta(
  z.object({
    id: meta(z.string(), { description: "Stable account id." }),
    username: z.string(),
    displayName: z.nullable(z.string()),
    email: z.nullable(z.string()),
    roles: z.array(z.string()),
    enabled: z.boolean(),
    createdAt: meta(z.string(), { format: "date-time", description: "ISO 8601, UTC." }),
  }),
  { description: "An account (a user of the password grant)." },
);

/** The body of GetAccountList. */
export const AccountPageSchema = meta(
  z.object({
    accounts: z.array(AccountViewSchema),
    page: z.int().check(z.minimum(1)),
    pageSize: z.int().check(z.minimum(1)),
    total: meta(z.int().check(z.minimum(0)), { description: "How many accounts there are in all." }),
    totalPages: meta(z.int().check(z.minimum(0)), { description: "ceil(total / pageSize); a page past it is empty." }),
  }),
  { description: "One page of accounts, in creation order (oldest first)." },
);

const MAX_PAGE = 2_147_483_647;

/** A positive decimal integer query parameter, at most once, no sign, no leading zero, at most `max`. */
function intParam(name: string, max: number, fallback: number, description: string) {
  const message = `${name} must be an integer from 1 to ${max}.`;
  const digits = z.string({ error: (issue) => (Array.isArray(issue.input) ? `${name} must be given at most once.` : message) }).check(z.regex(/^[1-9]\d{0,9}$/, message));
  return meta(z._default(z.pipe(z.pipe(digits, z.transform(Number)), z.int().check(z.minimum(1), z.maximum(max, message))), fallback), { description });
}

/**
 * The query of GetAccountList for one configuration (`pageSize` bounds are options). Built once per
 * configuration by the caller; the OpenAPI parameters are generated from its output side.
 *
 * @example
 * const query = accountListQuery({ maxPageSize: 100, defaultPageSize: 20 });
 * parseAccountListQuery(query, new URLSearchParams("page=2")); // { page: 2, pageSize: 20 }
 */
export function accountListQuery(settings: { maxPageSize: number; defaultPageSize: number }) {
  return z.object({
    page: intParam("page", MAX_PAGE, 1, "The page to return, from 1."),
    pageSize: intParam("pageSize", settings.maxPageSize, settings.defaultPageSize, "Accounts per page."),
  });
}

export type AccountListQuery = ReturnType<typeof accountListQuery>;

/**
 * Validates the query with `schema`; the first issue becomes the documented 400 (repeated
 * parameter, or the parameter's own code). Unknown parameters are ignored.
 */
export function parseAccountListQuery(schema: AccountListQuery, params: URLSearchParams): { page: number; pageSize: number } {
  const input: Record<string, string | string[]> = {};
  for (const name of Object.keys(schema.shape)) {
    const all = params.getAll(name);
    if (all.length === 1) input[name] = all[0]!;
    else if (all.length > 1) input[name] = all;
  }
  const result = schema.safeParse(input, { reportInput: true });
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const code = Array.isArray(issue.input)
    ? ApiErrorCode.repeatedParameter
    : issue.path[0] === "page"
      ? ApiErrorCode.invalidPage
      : ApiErrorCode.invalidPageSize;
  throw new ApiError(400, code, issue.message);
}
