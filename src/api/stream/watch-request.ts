// Validation of a watch request, shared by SSE query parameters and stream frames, so both
// transports accept exactly the same watches and refuse the same mistakes with the same words.
import { InvalidArgumentError } from '../../base/errors.js';
import type { WatchFilter, WatchSpec } from '../../watch/index.js';
import type { WireEncoding } from './event-json.js';
import type { WatchServiceOptions } from './types.js';

// A prefix is compared as UTF-16 code units, which matches UTF-8 byte prefixes only for
// well-formed strings: a lone surrogate would match differently from the store's ranges.
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export interface WatchRequest {
  readonly spec: WatchSpec & { readonly encoding: WireEncoding };
  /** 0 = no periodic progress notifications. */
  readonly progressMs: number;
}

export interface WatchRequestFields {
  readonly key: string;
  readonly prefix: boolean;
  readonly startRevision: number;
  readonly prevKv: boolean;
  /** `put` or `delete` keeps only that event type; absent keeps both. */
  readonly filter: 'put' | 'delete' | undefined;
  readonly progressMs: number;
  readonly encoding: WireEncoding;
}

export function watchRequest(fields: WatchRequestFields, options: WatchServiceOptions): WatchRequest {
  const { progressMs } = fields;
  if (progressMs !== 0 && (progressMs < options.progressMsMin || progressMs > options.progressMsMax)) {
    throw new InvalidArgumentError(
      `progressMs must be 0 (none) or between ${options.progressMsMin} and ${options.progressMsMax}`,
    );
  }
  if (!Number.isSafeInteger(fields.startRevision) || fields.startRevision < 0) {
    throw new InvalidArgumentError('startRevision must be an integer >= 0');
  }
  if (loneSurrogate.test(fields.key)) throw new InvalidArgumentError('key must be well-formed UTF-16 (no lone surrogates)');
  const filter: WatchFilter = fields.filter ?? 'all';
  return {
    spec: {
      key: fields.key,
      prefix: fields.prefix,
      startRevision: fields.startRevision,
      prevKv: fields.prevKv,
      filter,
      encoding: fields.encoding,
    },
    progressMs,
  };
}

/** The JSON error body that ends a watch (SSE `data:` line or a stream error frame). */
export function watchEndError(
  reason: 'compacted' | 'slow_consumer' | 'stopped' | 'leaderless' | 'permission_denied' | 'wrong_cell',
  details: Readonly<Record<string, unknown>>,
  message: string,
  lastRevision: number,
): Record<string, unknown> {
  if (reason === 'stopped') {
    return { code: 'unavailable', message: 'the node is stopping: resume on another node', lastRevision };
  }
  if (reason === 'leaderless') {
    const text = 'this node has no leader: its state may be stale; resume on another node';
    return { code: 'unavailable', message: text, lastRevision };
  }
  // Moved: resume on the cell the details name, from resumeRevision (docs/design/cells.md).
  if (reason === 'wrong_cell') return { code: reason, message, ...details, lastRevision, resumeRevision: lastRevision + 1 };
  return { code: reason, message, ...details, lastRevision };
}
