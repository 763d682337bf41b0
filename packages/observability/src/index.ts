export { createMetrics, serveMetrics, type MetricsListener, type MetricsOptions, type PlantgateMetrics, type ServeMetricsOptions } from "./metrics.js";
export { createLog, coreLogger, eventLogger, pruneLogger, LOG_LEVELS, type LogOptions } from "./logs.js";
export { observabilityFromEnv, type ObservabilitySettings } from "./env.js";
export { eventHooks, observers, setupObservability, type Observability } from "./setup.js";
