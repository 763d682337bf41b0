import { ApiError, ApiErrorCode } from "../errors/index.js";
import { BodyReadError, charset, mediaType, readBodyText } from "../http/body.js";
import { JsonNumber, JsonSyntaxError, parseJson, type JsonValue } from "../http/json.js";
import { json } from "../http/respond.js";
import type { Context } from "../options.js";
import type { PlantRecord } from "../storage/types.js";

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
/** Longest `name` and `tag`, in UTF-16 code units. */
export const MAX_PLANT_TEXT = 256;

/** Text every backend can store unchanged: no U+0000 (PostgreSQL text rejects it) and no lone surrogates (UTF-8 cannot encode them). */
export function isStorableText(text: string): boolean {
  return !/\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}

const bad = (code: (typeof ApiErrorCode)[keyof typeof ApiErrorCode], message: string) => new ApiError(400, code, message);

/**
 * Validates a parsed NewPlant body `{id: int64, name: string, tag?: string}`. Other members are
 * ignored (the schema does not forbid them) and are not stored.
 */
export function toNewPlant(body: JsonValue): PlantRecord {
  if (body === null || typeof body !== "object" || Array.isArray(body) || body instanceof JsonNumber) {
    throw bad(ApiErrorCode.notAnObject, "The body must be a JSON object.");
  }
  const { id, name, tag } = body;
  if (id === undefined || id === null) throw bad(ApiErrorCode.missingField, "id is required.");
  if (!(id instanceof JsonNumber) || !id.isInteger) throw bad(ApiErrorCode.wrongType, "id must be an integer.");
  const value = BigInt(id.raw);
  if (value < INT64_MIN || value > INT64_MAX) throw bad(ApiErrorCode.outOfRange, "id must be a signed 64-bit integer.");
  if (name === undefined || name === null) throw bad(ApiErrorCode.missingField, "name is required.");
  if (typeof name !== "string") throw bad(ApiErrorCode.wrongType, "name must be a string.");
  if (name.length === 0 || name.length > MAX_PLANT_TEXT) throw bad(ApiErrorCode.invalidValue, `name must be 1 to ${MAX_PLANT_TEXT} characters.`);
  if (!isStorableText(name)) throw bad(ApiErrorCode.invalidValue, "name must not contain U+0000 or unpaired surrogates.");
  if (tag !== undefined && tag !== null && typeof tag !== "string") throw bad(ApiErrorCode.wrongType, "tag must be a string.");
  if (typeof tag === "string" && !isStorableText(tag)) throw bad(ApiErrorCode.invalidValue, "tag must not contain U+0000 or unpaired surrogates.");
  if (typeof tag === "string" && tag.length > MAX_PLANT_TEXT) throw bad(ApiErrorCode.invalidValue, `tag must be at most ${MAX_PLANT_TEXT} characters.`);
  return { id: value, name, tag: typeof tag === "string" ? tag : null };
}

/** Serializes a plant with its int64 id written exactly (never through a JS number). */
export function plantJson(plant: PlantRecord): string {
  const tag = plant.tag === null ? "" : `,"tag":${JSON.stringify(plant.tag)}`;
  return `{"id":${plant.id.toString()},"name":${JSON.stringify(plant.name)}${tag}}`;
}

/** `POST /plants`: the bearer check has already passed. */
export async function createPlant(ctx: Context, request: Request): Promise<Response> {
  const type = mediaType(request);
  if (type !== "application/json" && !(type?.startsWith("application/") && type.endsWith("+json"))) {
    await request.body?.cancel().catch(() => {});
    throw bad(ApiErrorCode.unsupportedMediaType, "The body must be application/json.");
  }
  const cs = charset(request);
  if (cs !== null && cs !== "utf-8" && cs !== "utf8") {
    await request.body?.cancel().catch(() => {});
    throw bad(ApiErrorCode.unsupportedMediaType, "The body must be UTF-8 JSON.");
  }
  let text: string;
  try {
    text = await readBodyText(request, ctx.maxBodyBytes);
  } catch (e) {
    if (e instanceof BodyReadError) {
      if (e.reason === "too_large") throw bad(ApiErrorCode.bodyTooLarge, `The body exceeds ${ctx.maxBodyBytes} bytes.`);
      throw bad(ApiErrorCode.invalidJson, e.reason === "not_utf8" ? "The body is not valid UTF-8." : "The body could not be read.");
    }
    throw e;
  }
  let parsed: JsonValue;
  try {
    parsed = parseJson(text);
  } catch (e) {
    if (e instanceof JsonSyntaxError) throw bad(ApiErrorCode.invalidJson, `The body is not valid JSON: ${e.message}.`);
    throw e;
  }
  const plant = toNewPlant(parsed);
  if (!(await ctx.storage.plants.create(plant))) {
    throw bad(ApiErrorCode.duplicateId, `A plant with id ${plant.id.toString()} already exists.`);
  }
  return json(200, plantJson(plant));
}
