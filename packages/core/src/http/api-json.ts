import { ApiError, ApiErrorCode } from "../errors/index.js";
import type { HandleInfo } from "./handle-info.js";
import { BodyReadError, charset, contentCoded, mediaType, readBodyText } from "./body.js";
import { JsonSyntaxError, parseJson, type JsonValue } from "../util/json.js";

/**
 * Reads and losslessly parses a JSON body for the `{error, message}` surface (the plant store and
 * the console), after the caller has checked the media type: oversized -> 1007, not UTF-8,
 * unreadable or not JSON -> 1001.
 */
export async function readApiJson(request: Request, info: HandleInfo | undefined, maxBytes: number): Promise<JsonValue> {
  let text: string;
  try {
    text = await readBodyText(request, info, maxBytes);
  } catch (e) {
    if (e instanceof BodyReadError) {
      if (e.reason === "too_large") throw new ApiError(400, ApiErrorCode.bodyTooLarge, `The body exceeds ${maxBytes} bytes.`);
      throw new ApiError(400, ApiErrorCode.invalidJson, e.reason === "not_utf8" ? "The body is not valid UTF-8." : "The body could not be read.");
    }
    throw e;
  }
  try {
    return parseJson(text);
  } catch (e) {
    if (e instanceof JsonSyntaxError) throw new ApiError(400, ApiErrorCode.invalidJson, `The body is not valid JSON: ${e.message}.`);
    throw e;
  }
}

/** Which media types a JSON endpoint takes, and what it answers otherwise (400, 1008). */
export interface JsonMediaPolicy {
  /** Whether the media type (lower-cased, without parameters; null when absent) is accepted. */
  accepts(type: string | null): boolean;
  /** The message when it is not. */
  wrongType: string;
  /** The message when the charset is not UTF-8. */
  wrongCharset: string;
}

/**
 * Reads a JSON request body for the `{error, message}` surface: checks the media type and charset
 * against `policy` (cancelling the body when refused), then {@link readApiJson}.
 */
export async function readJsonBody(request: Request, info: HandleInfo | undefined, maxBytes: number, policy: JsonMediaPolicy): Promise<JsonValue> {
  let refused: string | undefined;
  if (!policy.accepts(mediaType(request))) refused = policy.wrongType;
  else if (contentCoded(request)) refused = "The body must not be content-coded (Content-Encoding).";
  else {
    const cs = charset(request);
    if (cs !== null && cs !== "utf-8" && cs !== "utf8") refused = policy.wrongCharset;
  }
  if (refused !== undefined) {
    await request.body?.cancel().catch(() => {});
    throw new ApiError(400, ApiErrorCode.unsupportedMediaType, refused);
  }
  return readApiJson(request, info, maxBytes);
}
