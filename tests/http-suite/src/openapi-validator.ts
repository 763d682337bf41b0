/**
 * Validates HTTP responses against plantgate's own OpenAPI 3.1 document (issue 6): the operation is
 * found by method and path, the status must be documented, the headers marked required must be
 * there and match, and the body must match the media type's schema (Ajv's JSON Schema 2020-12,
 * the dialect OpenAPI 3.1 uses). Pure JavaScript, no `node:*`, like the rest of the suite.
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

// ajv-formats is CommonJS; under some loaders its default export is the module object.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as typeof addFormatsModule;

type Json = Record<string, unknown>;
interface MediaType {
  schema?: Json;
}
interface ResponseObject {
  description: string;
  headers?: Record<string, { required?: boolean; schema: Json }>;
  content?: Record<string, MediaType>;
}
interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, { responses: Record<string, ResponseObject> }>>;
  components: { schemas: Record<string, Json> };
}

/** One response as the suite saw it. */
export interface SeenResponse {
  method: string;
  /** Path relative to the base URL, without the query. */
  path: string;
  status: number;
  headers: Headers;
  /** Undefined for HEAD (no body to check). */
  body: string | undefined;
}

export interface ResponseValidator {
  /** Problems with `response`; empty when it matches the document. */
  check(response: SeenResponse): string[];
}

const INT32 = 2 ** 31;

/**
 * Builds a validator from the document text.
 *
 * @param options.hostAnswersUnknownPaths the host framework (not plantgate) answers paths that are
 *   no route, e.g. the Express adapter's `next()`: their 404 is not plantgate's to describe.
 */
export function createResponseValidator(documentText: string, options: { hostAnswersUnknownPaths?: boolean } = {}): ResponseValidator {
  const doc = JSON.parse(documentText) as OpenApiDocument;
  if (doc.openapi !== "3.1.0") throw new Error(`not an OpenAPI 3.1.0 document: ${doc.openapi}`);
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  ajv.addFormat("int32", { type: "number", validate: (n: number) => Number.isInteger(n) && n >= -INT32 && n < INT32 });
  // JSON.parse has already rounded values past 2^53; the bounds in the schema are checked by minimum/maximum.
  ajv.addFormat("int64", { type: "number", validate: (n: number) => Number.isInteger(n) });
  ajv.addFormat("password", true);
  // The whole document under one id, so "#/components/schemas/X" resolves inside it.
  ajv.addSchema({ ...doc, $id: "urn:plantgate:openapi" } as Json);
  const compiled = new Map<string, ValidateFunction>();
  const validatorAt = (pointer: string): ValidateFunction => {
    let v = compiled.get(pointer);
    if (!v) compiled.set(pointer, (v = ajv.compile({ $ref: `urn:plantgate:openapi#${pointer}` })));
    return v;
  };
  const escape = (s: string) => s.replace(/~/g, "~0").replace(/\//g, "~1");

  const templates = Object.keys(doc.paths).map((template) => ({
    template,
    regex: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}$`),
  }));

  const checkBody = (pointer: string, media: string, body: string, problems: string[]) => {
    let value: unknown = body;
    if (media === "application/json" || media.endsWith("+json")) {
      try {
        value = JSON.parse(body);
      } catch {
        problems.push(`the ${media} body is not JSON: ${body.slice(0, 80)}`);
        return;
      }
    }
    const validate = validatorAt(pointer);
    if (!validate(value)) problems.push(`body does not match ${pointer}: ${ajv.errorsText(validate.errors)}; body: ${body.slice(0, 300)}`);
  };

  return {
    check(r) {
      const problems: string[] = [];
      const media = (r.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
      const method = r.method.toLowerCase() === "head" ? "get" : r.method.toLowerCase();
      const match = templates.find((t) => t.regex.test(r.path));
      const operation = match ? doc.paths[match.template]![method] : undefined;
      if (!operation) {
        // No operation: only the generic answers (404 unknown path, 405 wrong method) are allowed,
        // in one of the two documented error shapes.
        if (r.status !== 404 && r.status !== 405) return [`${r.method} ${r.path} is not in the document but answered ${r.status}`];
        if (r.status === 404 && options.hostAnswersUnknownPaths && !match) return [];
        if (r.body === undefined) return [];
        if (media !== "application/json") return [`${r.method} ${r.path}: a ${r.status} with ${media || "no content type"}`];
        const asApi = validatorAt("/components/schemas/Error");
        const asOAuth = validatorAt("/components/schemas/OAuthError");
        const value = JSON.parse(r.body) as unknown;
        if (!asApi(value) && !asOAuth(value)) problems.push(`${r.method} ${r.path}: ${r.status} body is neither Error nor OAuthError: ${r.body}`);
        return problems;
      }
      const base = `/paths/${escape(match!.template)}/${method}/responses`;
      const status = String(r.status);
      const spec = operation.responses[status] ?? operation.responses.default;
      if (!spec) return [`${r.method} ${r.path}: status ${status} is not documented (documented: ${Object.keys(operation.responses).join(", ")})`];
      const at = `${base}/${operation.responses[status] ? status : "default"}`;
      for (const [name, header] of Object.entries(spec.headers ?? {})) {
        const value = r.headers.get(name);
        if (value === null) {
          if (header.required) problems.push(`${r.method} ${r.path} ${status}: required header ${name} is missing`);
          continue;
        }
        const validate = validatorAt(`${at}/headers/${escape(name)}/schema`);
        if (!validate(value)) problems.push(`${r.method} ${r.path} ${status}: header ${name}: ${value} does not match: ${ajv.errorsText(validate.errors)}`);
      }
      if (r.body === undefined) return problems;
      if (!spec.content) {
        if (r.body !== "") problems.push(`${r.method} ${r.path} ${status}: documented without a body, got ${r.body.slice(0, 80)}`);
        return problems;
      }
      if (!spec.content[media]) {
        problems.push(`${r.method} ${r.path} ${status}: content type ${media} is not documented (${Object.keys(spec.content).join(", ")})`);
        return problems;
      }
      if (spec.content[media]!.schema) checkBody(`${at}/content/${escape(media)}/schema`, media, r.body, problems);
      return problems;
    },
  };
}
