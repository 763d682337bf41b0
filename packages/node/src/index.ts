export { HANDLE_PLAIN, type FetchApp, type FetchClientInfo, type PlainAnswer } from "./fetch-app.js";
export { toRequest, type ToRequestOptions } from "./to-request.js";
export { writeResponse } from "./write-response.js";
export { isPlainAnswer, writePlainAnswer } from "./plain-answer.js";
export { toLightRequest } from "./node-request.js";
export { createRequestListener, type RequestListenerOptions } from "./create-request-listener.js";
export { serve, type ServeOptions, type ServeResult } from "./serve.js";
export { nodeCrypto, type NodeCryptoOptions, type NodeCryptoProvider } from "./node-crypto.js";
export { schedulePrune, type Prunable, type PruneLogger, type PruneSchedule, type SchedulePruneOptions } from "./prune-schedule.js";
