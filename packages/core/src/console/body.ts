import { MAX_TTL_SECONDS } from "../admin/clients.js";
import { ApiError, ApiErrorCode } from "../errors/index.js";
import type { JsonMediaPolicy } from "../http/api-json.js";
import { JsonNumber, type JsonValue } from "../util/json.js";
import type { ConsoleRequest } from "./request.js";

const bad = (code: (typeof ApiErrorCode)[keyof typeof ApiErrorCode], message: string) => new ApiError(400, code, message);

/** A parsed JSON object body; members are read through the typed getters below. */
export type JsonObject = { [key: string]: JsonValue };

/**
 * The console's JSON bodies: application/json only, UTF-8. Requiring it also means a cross-origin
 * page cannot send one without a CORS preflight, which the console never answers.
 */
export const CONSOLE_JSON: JsonMediaPolicy = {
  accepts: (type) => type === "application/json",
  wrongType: "The body must be UTF-8 application/json.",
  wrongCharset: "The body must be UTF-8 application/json.",
};

/** The request's body as a JSON object (read with {@link CONSOLE_JSON} and the plant store's limits and error numbers). */
export async function readJsonObject(request: ConsoleRequest): Promise<JsonObject> {
  const parsed = await request.readJson();
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed) || parsed instanceof JsonNumber) {
    throw bad(ApiErrorCode.notAnObject, "The body must be a JSON object.");
  }
  return parsed;
}

/** A required string member. */
export function requiredString(body: JsonObject, name: string, max: number): string {
  const v = body[name];
  if (v === undefined || v === null) throw bad(ApiErrorCode.missingField, `${name} is required.`);
  if (typeof v !== "string") throw bad(ApiErrorCode.wrongType, `${name} must be a string.`);
  if (v.length < 1 || v.length > max) throw bad(ApiErrorCode.invalidValue, `${name} must be 1 to ${max} characters.`);
  return v;
}

/** An optional string member; an empty string counts as absent (what an empty form field sends). */
export function optionalString(body: JsonObject, name: string, max: number): string | undefined {
  const v = body[name];
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v !== "string") throw bad(ApiErrorCode.wrongType, `${name} must be a string.`);
  if (v.length > max) throw bad(ApiErrorCode.invalidValue, `${name} must be at most ${max} characters.`);
  return v;
}

/** An optional list of strings. */
export function optionalStrings(body: JsonObject, name: string): string[] | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.some((s) => typeof s !== "string")) throw bad(ApiErrorCode.wrongType, `${name} must be a list of strings.`);
  if (v.length > 32) throw bad(ApiErrorCode.invalidValue, `${name} must have at most 32 entries.`);
  return v as string[];
}

/** An optional positive integer (seconds), or null for "the server default". */
export function optionalSeconds(body: JsonObject, name: string): number | null {
  const v = body[name];
  if (v === undefined || v === null) return null;
  if (!(v instanceof JsonNumber) || !v.isInteger) throw bad(ApiErrorCode.wrongType, `${name} must be an integer number of seconds.`);
  const n = Number(v.raw);
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_TTL_SECONDS) {
    throw bad(ApiErrorCode.invalidValue, `${name} must be from 1 to ${MAX_TTL_SECONDS} seconds.`);
  }
  return n;
}

/** An optional boolean. */
export function optionalBoolean(body: JsonObject, name: string): boolean | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") throw bad(ApiErrorCode.wrongType, `${name} must be true or false.`);
  return v;
}
