import type { Context, Urls } from "../../context.js";
import type { ClientRecord, GrantType } from "../../storage/types.js";
import type { TokenResponse } from "../issue.js";

/** What every grant handler receives: an authenticated client and the request's parameters. */
export interface GrantInput {
  ctx: Context;
  urls: Urls;
  client: ClientRecord;
  params: Map<string, string>;
  now: number;
  /** The client's address as resolved for the brute-force throttle; undefined when the adapter gave none. */
  clientIp: string | undefined;
}

/** One grant type. Every grant file exports one of these, all of the same shape. */
export interface Grant {
  grantType: GrantType;
  /** Parameters that must be present (else `invalid_request`). */
  required: readonly string[];
  handle(input: GrantInput): Promise<TokenResponse>;
}
