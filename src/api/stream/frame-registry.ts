// The stream's frame types: a small registry so each feature adds its own handlers (watches and
// key-value here; lease keepalives of issue 7 register `keepalive` the same way) without touching
// the session that reads frames and writes answers.
import { assert } from '../../base/assert.js';
import { InvalidArgumentError } from '../../base/errors.js';
import type { Frame, FrameHandler } from './types.js';

export { parseFrame, salvageId } from '../../base/stream-frame.js';

export class FrameRegistry<Session> {
  private readonly handlers = new Map<string, FrameHandler<Session>>();

  register(type: string, handler: FrameHandler<Session>): this {
    assert(!this.handlers.has(type), `frame type ${type} registered twice`);
    assert(/^[a-z][a-zA-Z]*$/.test(type), 'frame types are plain words');
    this.handlers.set(type, handler);
    return this;
  }

  handler(type: string): FrameHandler<Session> {
    const handler = this.handlers.get(type);
    if (handler === undefined) {
      throw new InvalidArgumentError(`unknown frame type "${type}"; known: ${[...this.handlers.keys()].join(', ')}`);
    }
    return handler;
  }
}

/** Refuses fields a frame type does not know: a typo must not silently change a request. */
export function allowFields(frame: Frame, allowed: readonly string[]): void {
  for (const name of Object.keys(frame.fields)) {
    if (name !== 'id' && name !== 'type' && !allowed.includes(name)) {
      throw new InvalidArgumentError(`unknown field "${name}" in a ${frame.type} frame`);
    }
  }
}

export function optionalBoolean(frame: Frame, name: string): boolean | undefined {
  const value = frame.fields[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw new InvalidArgumentError(`${name} must be true or false`);
  return value;
}

export function optionalInteger(frame: Frame, name: string, min = 0): number | undefined {
  const value = frame.fields[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new InvalidArgumentError(`${name} must be an integer >= ${min}`);
  }
  return value;
}

export function optionalOneOf<T extends string>(frame: Frame, name: string, allowed: readonly T[]): T | undefined {
  const value = frame.fields[name];
  if (value === undefined) return undefined;
  if (!(allowed as readonly unknown[]).includes(value)) {
    throw new InvalidArgumentError(`${name} must be one of ${allowed.join(', ')}`);
  }
  return value as T;
}

export function optionalString(frame: Frame, name: string, maxBytes: number): string | undefined {
  const value = frame.fields[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0 || Buffer.byteLength(value) > maxBytes) {
    throw new InvalidArgumentError(`${name} must be a string of 1 to ${maxBytes} bytes`);
  }
  return value;
}
