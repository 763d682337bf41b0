import * as z from "zod/mini";
import { ApiError, ApiErrorCode, type ApiErrorNumber } from "../errors/index.js";
import { JsonNumber, type JsonValue } from "../util/json.js";
import type { PlantRecord } from "../storage/types.js";
import { bigintInt64, jsonInt64 } from "./int64.js";
import { meta } from "./meta.js";
import { isStorableText } from "../util/storable-text.js";

/** Longest `name` and `tag`, in Unicode code points (as JSON Schema's maxLength counts, so the OpenAPI document states the same limit). */
export const MAX_PLANT_TEXT = 256;

export { isStorableText };

const code = (c: ApiErrorNumber) => ({ params: { code: c } });
const storable = (field: string) =>
  [isStorableText, { message: `${field} must not contain U+0000 or unpaired surrogates.`, ...code(ApiErrorCode.invalidValue) }] as const;
const nameLength = `name must be 1 to ${MAX_PLANT_TEXT} characters.`;
const tagLength = `tag must be at most ${MAX_PLANT_TEXT} characters.`;

/**
 * The body of `POST /plants` (the spec's NewPlant), over the lossless parse of `util/json.ts`.
 * Members other than these are ignored and not stored. Checks run in the order the error table
 * documents; the first failing one is the answer (see {@link newPlantFromBody}).
 */
export const NewPlantSchema = meta(
  z.pipe(
    // The parser's JsonNumber is a JSON number that is an object only to JavaScript.
    z.transform((v: unknown) => (v instanceof JsonNumber ? v.raw : v)),
    z.object(
      {
        id: meta(jsonInt64("id"), {
          description:
            "The plant's id, a signed 64-bit integer; it round-trips exactly. Written as an integer literal: a fraction or an exponent (`1.0`, `1e2`), which JSON Schema's integer type admits, is refused as mistyped (1004).",
          examples: [10],
        }),
        name: meta(
          z
            .string({ error: (issue) => (issue.input == null ? "name is required." : "name must be a string.") })
            .check(z.minLength(1, nameLength), z.maxLength(MAX_PLANT_TEXT, nameLength), z.refine(...storable("name"))),
          { examples: ["Monstera"] },
        ),
        tag: meta(z.optional(z.nullable(z.string({ error: "tag must be a string." }).check(z.refine(...storable("tag")), z.maxLength(MAX_PLANT_TEXT, tagLength)))), {
          description: "An optional tag; null is the same as absent.",
          examples: ["indoor"],
        }),
      },
      { error: "The body must be a JSON object." },
    ),
  ),
  { description: "A plant to add to the store." },
);

/** The body of a successful `POST /plants` (the spec's Plant). */
export const PlantSchema = meta(
  z.object({
    id: meta(bigintInt64(), { description: "The plant's id, exactly as sent.", examples: [10] }),
    name: meta(z.string().check(z.minLength(1), z.maxLength(MAX_PLANT_TEXT)), { examples: ["Monstera"] }),
    tag: meta(z.optional(z.string().check(z.maxLength(MAX_PLANT_TEXT))), { description: "Present when the plant has a tag.", examples: ["indoor"] }),
  }),
  { description: "A plant in the store." },
);

/**
 * Validates a parsed NewPlant body with {@link NewPlantSchema}; the first issue becomes the
 * documented 400 for its cause.
 *
 * @example
 * newPlantFromBody(parseJson('{"id": 1, "name": "Fern"}')); // { id: 1n, name: "Fern", tag: null }
 */
export function newPlantFromBody(body: JsonValue): PlantRecord {
  const result = NewPlantSchema.safeParse(body, { reportInput: true });
  if (result.success) {
    const { id, name, tag } = result.data;
    return { id: BigInt(id.raw), name, tag: tag ?? null };
  }
  const issue = result.error.issues[0]!;
  const explicit = (issue as { params?: { code?: ApiErrorNumber } }).params?.code;
  let errorCode: ApiErrorNumber;
  if (explicit !== undefined) errorCode = explicit;
  else if (issue.path.length === 0) errorCode = ApiErrorCode.notAnObject;
  else if (issue.code === "invalid_type" || issue.code === "custom") {
    errorCode = issue.input == null ? ApiErrorCode.missingField : ApiErrorCode.wrongType;
  } else errorCode = ApiErrorCode.invalidValue;
  return throwBad(errorCode, issue.message);
}

function throwBad(errorCode: ApiErrorNumber, message: string): never {
  throw new ApiError(400, errorCode, message);
}
