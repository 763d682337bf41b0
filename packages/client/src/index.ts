/**
 * `@plantgate/client`: the typed SDK third-party systems use to call a plantgate service.
 * Runtime-agnostic (global `fetch` or any injected one); no Node built-ins.
 *
 * @example
 * import { createClient, ApiError } from "@plantgate/client";
 * const client = createClient({ baseUrl, clientId, clientSecret, auth: "basic", scope: "Platform_UserAPIs" });
 * for await (const account of client.accounts({ pageSize: 100 })) console.log(account.username);
 */
export { createClient, ACCOUNTS_PATH, PLANTS_PATH, type PlantgateClient } from "./client.js";
export { basicAuthorization, TOKEN_PATH } from "./token-manager.js";
export type { AssertionAlg, PrivateKeyInput } from "./assertion.js";
export {
  PlantgateClientError,
  OAuthError,
  ApiError,
  NetworkError,
  serverText,
  SERVER_TEXT_MAX,
  type OAuthErrorBody,
  type ApiErrorBody,
  type NetworkErrorReason,
  type GrantType,
} from "./errors.js";
export type { FetchLike, FetchInit, FetchResponse } from "./fetch.js";
export type {
  Account,
  AccountPage,
  CachedToken,
  CallOptions,
  ClientOptions,
  ListAccountsParams,
  NewPlant,
  PasswordCredentials,
  Plant,
  TokenCache,
  TokenInfo,
} from "./types.js";
