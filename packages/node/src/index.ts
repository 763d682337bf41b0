export type { FetchApp, HandleApp, HandleInfo, NodeApp, PlainAnswer } from "./fetch-app.js";
export { toRequest, toExchange, refusedRequestAnswer, releaseRequestBody, type ToRequestOptions, type NodeExchange } from "./to-request.js";
export { writeResponse } from "./write-response.js";
export { BODY_CONSUMED, PlantgateBodyConsumedError } from "./body-consumed.js";
export { originOf, MisdirectedRequestError } from "./request-origin.js";
export { HttpVersionNotSupportedError } from "./node-request.js";
export { AmbiguousPathError } from "./incoming.js";
/** @internal @plantgate/express's check of a target whose path the URL parser reads as another. */
export { hasAmbiguousPath } from "./incoming.js";
/** @internal @plantgate/express's toExchange for the target it checked with hasAmbiguousPath (not checked again). */
export { toCheckedExchange } from "./to-request.js";
/** @internal @plantgate/express's HTTP version check, the one the request builder runs. */
export { isOtherHttpMajor } from "./node-request.js";
/** @internal @plantgate/express's check of an upload Node's parser refused after the app got its request. */
export { isRefusedUpload } from "./client-errors.js";
export { createRequestListener, type RequestListenerOptions } from "./create-request-listener.js";
export { serve, listeningUrl, SERVE_DEFAULTS, type ServeOptions, type ServeResult } from "./serve.js";
export { answerMalformedRequests } from "./client-errors.js";
export { closeGracefully, DEFAULT_CLOSE_TIMEOUT_MS } from "./close-gracefully.js";
export { nodeCrypto, type NodeCryptoOptions, type NodeCryptoProvider } from "./node-crypto.js";
export { PRUNE_STOP_TIMEOUT_MS, schedulePrune, type Prunable, type PruneLogger, type PruneSchedule, type SchedulePruneOptions } from "./prune-schedule.js";
export {
  lingerOnUnreadUpload,
  checkUploadDiscardOptions,
  DEFAULT_UPLOAD_DISCARD_BYTES,
  DEFAULT_UPLOAD_DISCARD_MS,
  type UploadDiscardOptions,
} from "./linger.js";
