import * as z from "zod/mini";

/**
 * `schema` with OpenAPI metadata (description, examples, format, title): a copy registered in
 * zod's global registry, which the JSON Schema output reads. What classic zod's `.meta()` does;
 * core's schemas are written with `zod/mini` (functions, not methods) so that a Worker bundles
 * only the parts of zod it uses.
 *
 * @example
 * const Id = meta(z.string(), { description: "Stable account id." });
 */
export function meta<T extends z.ZodMiniType>(schema: T, data: z.core.GlobalMeta): T {
  const copy = schema.clone();
  z.globalRegistry.add(copy, data);
  return copy;
}
