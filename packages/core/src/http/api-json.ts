import { ApiError, ApiErrorCode } from "../errors/index.js";
import { BodyReadError, readBodyText } from "./body.js";
import { JsonSyntaxError, parseJson, type JsonValue } from "../util/json.js";

/**
 * Reads and losslessly parses a JSON body for the `{error, message}` surface (the plant store and
 * the console), after the caller has checked the media type: oversized -> 1007, not UTF-8,
 * unreadable or not JSON -> 1001.
 */
export async function readApiJson(request: Request, maxBytes: number): Promise<JsonValue> {
  let text: string;
  try {
    text = await readBodyText(request, maxBytes);
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
