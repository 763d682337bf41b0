import { ApiError, ApiErrorCode } from "../errors/index.js";
import type { JsonMediaPolicy } from "../http/api-json.js";
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

/** The media types `POST /plants` takes: application/json and any `application/*+json`. */
export const PLANT_JSON: JsonMediaPolicy = {
  accepts: (type) => type === "application/json" || (type !== null && type.startsWith("application/") && type.endsWith("+json")),
  wrongType: "The body must be application/json.",
  wrongCharset: "The body must be UTF-8 JSON.",
};

/** `POST /plants` with its parsed body ({@link PLANT_JSON}): the bearer check has already passed. */
export async function createPlant(ctx: Context, body: JsonValue): Promise<PlainResponse> {
  const plant = toNewPlant(body);
  if (!(await ctx.storage.plants.create(plant))) {
    throw bad(ApiErrorCode.duplicateId, `A plant with id ${plant.id.toString()} already exists.`);
  }
  return json(200, plantJson(plant));
}
