import { ApiError, ApiErrorCode } from "../errors/index.js";
import { readApiJson } from "../http/api-json.js";
import { charset, mediaType } from "../http/body.js";
import type { JsonValue } from "../util/json.js";
import { json, type PlainResponse } from "../http/respond.js";
import type { Context } from "../context.js";
import { newPlantFromBody } from "../schemas/plants.js";
import type { PlantRecord } from "../storage/types.js";

export { isStorableText, MAX_PLANT_TEXT } from "../schemas/plants.js";

const bad = (code: (typeof ApiErrorCode)[keyof typeof ApiErrorCode], message: string) => new ApiError(400, code, message);

/**
 * Validates a parsed NewPlant body `{id: int64, name: string, tag?: string}` with the zod schema
 * the OpenAPI document is generated from. Other members are ignored and are not stored.
 */
export function toNewPlant(body: JsonValue): PlantRecord {
  return newPlantFromBody(body);
}

/** Serializes a plant with its int64 id written exactly (never through a JS number). */
export function plantJson(plant: PlantRecord): string {
  const tag = plant.tag === null ? "" : `,"tag":${JSON.stringify(plant.tag)}`;
  return `{"id":${plant.id.toString()},"name":${JSON.stringify(plant.name)}${tag}}`;
}

/** `POST /plants`: the bearer check has already passed. */
export async function createPlant(ctx: Context, request: Request): Promise<PlainResponse> {
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
  const parsed = await readApiJson(request, ctx.maxBodyBytes);
  const plant = toNewPlant(parsed);
  if (!(await ctx.storage.plants.create(plant))) {
    throw bad(ApiErrorCode.duplicateId, `A plant with id ${plant.id.toString()} already exists.`);
  }
  return json(200, plantJson(plant));
}
