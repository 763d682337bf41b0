/** The zod schemas: the single source for request validation and for the OpenAPI document. */
export * from "./accounts.js";
export * from "./errors.js";
export * from "./int64.js";
export * from "./oauth.js";
export * from "./operations.js";
export * from "./plants.js";
export * from "./meta.js";
