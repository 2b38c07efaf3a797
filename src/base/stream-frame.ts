// One /v1/stream frame as read off the wire (docs/api/stream.md), checked the same way by the
// node's stream (src/api/stream) and the router's relay (src/router/stream-relay.ts).
import { InvalidArgumentError } from './errors.js';

export interface Frame {
  readonly id: string | number;
  readonly type: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

/**
 * Parses one text message into a frame. `id` is a string (≤ 128 bytes) or a safe integer,
 * echoed in every answer; a frame whose id cannot be read is answered with id null.
 */
export function parseFrame(text: string): Frame {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new InvalidArgumentError(`malformed JSON frame: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError('a frame is a JSON object');
  }
  const fields = value as Record<string, unknown>;
  const id = fields['id'];
  const idOk =
    (typeof id === 'string' && id.length > 0 && Buffer.byteLength(id) <= 128) ||
    (typeof id === 'number' && Number.isSafeInteger(id));
  if (!idOk) throw new InvalidArgumentError('a frame needs an id: a string of 1 to 128 bytes or an integer');
  const type = fields['type'];
  if (typeof type !== 'string') {
    throw new InvalidArgumentError('a frame needs a type', { id });
  }
  return { id: id as string | number, type, fields };
}

/** The id of a frame that failed to parse, when it can still be read (to echo it). */
export function salvageId(text: string): string | number | null {
  try {
    const id = (JSON.parse(text) as { id?: unknown })?.id;
    return typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id)) ? id : null;
  } catch {
    return null;
  }
}
