// The stream layer: GET /v1/stream (one WebSocket for key-value, watches and, later, lease
// keepalives) and the watch service shared with SSE (GET /v1/watch, src/api/http/watch-routes.ts).
export { StreamServer } from './stream-server.js';
export type { StreamServerOptions } from './stream-server.js';
export { StreamSession } from './session.js';
export { WatchService } from './watch-service.js';
export { FrameRegistry, parseFrame, allowFields, optionalBoolean, optionalInteger, optionalOneOf, optionalString } from './frame-registry.js';
export { batchJson, batchSse, kvJson, sseMessage } from './event-json.js';
export type { BatchVariant, WireEncoding } from './event-json.js';
export { watchRequest, watchEndError } from './watch-request.js';
export type { WatchRequest, WatchRequestFields } from './watch-request.js';
export { defaultStreamLimits, defaultWatchServiceOptions } from './types.js';
export type { Frame, FrameContext, FrameHandler, StreamLimits, WatchServiceOptions, WatchTag } from './types.js';
