export { createHttpHandler } from './handler.js';
export type { HttpApiOptions, RouteGroup, RouteRequest } from './handler.js';
export { defaultApiLimits } from './limits.js';
export type { ApiLimits } from './limits.js';
export { readBody, readJson } from './body.js';
export { sendError, sendJson } from './respond.js';
export type { ResponseContext } from './respond.js';
export { Query, parseInteger, headerInteger, requestId, validKey, validValue, decodeKey, decodeText } from './parse.js';
export type { Encoding } from './parse.js';
