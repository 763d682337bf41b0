export { createSqlStorage, type CreateSqlStorageOptions, type SqlStorage } from "./storage.js";
export { DEFAULT_QUERY_TIMEOUT_MS, openSqlStorage, pendingMigrationsAt, type OpenSqlStorageOptions } from "./open.js";
export { LATEST_SCHEMA_VERSION, pendingMigrations } from "./migrations.js";
export { driverErrorCode, SchemaTooNewError, UnstorableValueError } from "./errors.js";
export { StorageConfigError } from "./config-error.js";
export { TransactionPoolingError } from "./pooler-probe.js";
export type { Database, SqlFamily } from "./schema.js";
export { sqliteFastPath, type SqliteFastPath } from "./sqlite-fast.js";
export type { ClientCacheState, PgClientCacheOptions } from "./pg-client-cache.js";
