import * as z from "zod/mini";
import { ApiErrorCode } from "../errors/index.js";
import { JsonNumber } from "../util/json.js";

/** The int64 range, exact (a JS number cannot hold 2^63 - 1). */
export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

/**
 * Definitions of the schemas whose JSON Schema is `{type: integer, format: int64, minimum, maximum}`.
 * zod has no JSON Schema for a JsonNumber (a custom class) or a bigint, so the OpenAPI generator
 * looks them up here. Keyed by definition because `meta()` (meta.ts) clones a schema but keeps its definition.
 */
const INT64_DEFS = new WeakSet<object>();

/** Whether `schema` is one of the int64 schemas below (or a `meta()` copy of one). */
export function isInt64Schema(schema: z.core.$ZodType): boolean {
  return INT64_DEFS.has(schema._zod.def);
}

/**
 * Marks a string that the document serializer writes as a bare JSON number: a JS number cannot
 * hold 2^63 - 1, and zod's JSON Schema output goes through JSON.stringify, which refuses bigints.
 */
export const EXACT_NUMBER_MARKER = "\u0000exact-number:";

/** The JSON Schema of an int64, with its bounds written exactly. */
export const INT64_JSON_SCHEMA = {
  type: "integer",
  format: "int64",
  minimum: EXACT_NUMBER_MARKER + INT64_MIN.toString(),
  maximum: EXACT_NUMBER_MARKER + INT64_MAX.toString(),
} as const;

/**
 * An int64 member of a losslessly parsed JSON body ({@link JsonNumber}), checked in the order the
 * error table documents: missing, not an integer, out of range. Refinement issues carry their
 * `ApiErrorCode` in `params.code`.
 *
 * @example
 * const Body = z.object({ id: jsonInt64("id") });
 * Body.parse(parseJson('{"id": 9223372036854775807}')).id.raw; // "9223372036854775807"
 */
export function jsonInt64(field: string) {
  const present = mark(
    z.instanceof(JsonNumber, { error: (issue) => (issue.input == null ? `${field} is required.` : `${field} must be an integer.`) }),
  );
  // abort: a fraction or an exponent must not reach BigInt() below.
  const integer = mark(present.check(z.refine((n) => n.isInteger, { message: `${field} must be an integer.`, abort: true, params: { code: ApiErrorCode.wrongType } })));
  return mark(
    integer.check(
      z.refine(
        (n) => {
          const v = BigInt(n.raw);
          return v >= INT64_MIN && v <= INT64_MAX;
        },
        { message: `${field} must be a signed 64-bit integer.`, params: { code: ApiErrorCode.outOfRange } },
      ),
    ),
  );
}

/** An int64 held as a bigint (what handlers return), for response schemas. */
export function bigintInt64() {
  return mark(mark(mark(z.bigint()).check(z.minimum(INT64_MIN))).check(z.maximum(INT64_MAX)));
}

/** Each refinement is a schema of its own, and zod describes every step: mark them all. */
function mark<T extends z.core.$ZodType>(schema: T): T {
  INT64_DEFS.add(schema._zod.def);
  return schema;
}
