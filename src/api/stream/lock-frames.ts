// Locks and elections on the stream (/v1/stream), so a process keeps one connection for its
// session, its locks and its watches. Frames mirror the HTTP routes (docs/api/locks.md):
//   lockAcquire {name, lease, owner?, waitMs?, requestId?}   lockRelease {name, key, requestId?}
//   lockState {name}   fencingCheck {lock, token}
//   campaign {name, lease, value, waitMs?, requestId?, encoding?}   proclaim {name, key, value, ...}
//   resign {name, key, requestId?}   leader {name, encoding?}
//   observe {name, encoding?}: the current leadership, then every change, each pushed as
//   {id, type: "leadership", revision, leader}; observeCancel (same id) ends it ("canceled").
// A waiting acquire or campaign ends (its queue entry deleted) when the connection closes.
import type { ElectionApi, LockApi } from '../../lock/api.js';
import { leaderJson } from '../http/election-routes.js';
import { decodeText, type Encoding } from '../http/parse.js';
import { defaultAcquireWaitMs } from '../http/lock-routes.js';
import { allowFields, optionalInteger, optionalOneOf, optionalString } from './frame-registry.js';
import type { Frame, FrameHandler } from './types.js';
import { InvalidArgumentError, TooLargeError } from '../../base/errors.js';

function required<T>(value: T | undefined, name: string): T {
  if (value === undefined) throw new InvalidArgumentError(`${name} is required`);
  return value;
}

const nameOf = (frame: Frame, field = 'name'): string => required(optionalString(frame, field, 128), field);
const requestIdOf = (frame: Frame): string | undefined => optionalString(frame, 'requestId', 128);
const encodingOf = (frame: Frame): Encoding => optionalOneOf(frame, 'encoding', ['utf8', 'base64'] as const) ?? 'utf8';

/** Observations open on each connection, by the id of the frame that opened them. */
const observations = new WeakMap<object, Map<string, AbortController>>();
/** Per connection: observations are cheap but not free (a feed subscription each). */
const observationsPerConnectionMax = 64;

export function lockFrameHandlers<Session extends object>(locks: LockApi, elections: ElectionApi): Record<string, FrameHandler<Session>> {
  const valueOf = (frame: Frame, max: number): Uint8Array => {
    const value = decodeText(frame.fields['value'], encodingOf(frame), 'value');
    if (value.length > max) throw new TooLargeError('value', value.length, max);
    return new Uint8Array(value);
  };
  return {
    lockAcquire: async (frame, context) => {
      allowFields(frame, ['name', 'lease', 'owner', 'waitMs', 'requestId']);
      const result = await locks.acquire(
        nameOf(frame),
        {
          lease: required(optionalInteger(frame, 'lease', 1), 'lease'),
          owner: optionalString(frame, 'owner', 256) ?? '',
          waitMs: optionalInteger(frame, 'waitMs', 0) ?? defaultAcquireWaitMs,
          signal: context.closed,
        },
        requestIdOf(frame),
        context.principal,
      );
      return { ...result };
    },
    lockRelease: async (frame, context) => {
      allowFields(frame, ['name', 'key', 'requestId']);
      const released = await locks.release(nameOf(frame), required(optionalString(frame, 'key', 4096), 'key'), requestIdOf(frame), context.principal);
      return { released: true, revision: released.revision };
    },
    lockState: async (frame, context) => {
      allowFields(frame, ['name']);
      return { ...(await locks.state(nameOf(frame), context.principal)) };
    },
    fencingCheck: async (frame, context) => {
      allowFields(frame, ['lock', 'token']);
      return { ...(await locks.check(nameOf(frame, 'lock'), required(optionalInteger(frame, 'token', 1), 'token'), context.principal)) };
    },
    campaign: async (frame, context) => {
      allowFields(frame, ['name', 'lease', 'value', 'waitMs', 'requestId', 'encoding']);
      const won = await elections.campaign(
        nameOf(frame),
        {
          lease: required(optionalInteger(frame, 'lease', 1), 'lease'),
          value: valueOf(frame, context.apiLimits.valueBytesMax),
          waitMs: optionalInteger(frame, 'waitMs', 0) ?? defaultAcquireWaitMs,
          signal: context.closed,
        },
        requestIdOf(frame),
        context.principal,
      );
      return { ...won };
    },
    proclaim: async (frame, context) => {
      allowFields(frame, ['name', 'key', 'value', 'requestId', 'encoding']);
      const key = required(optionalString(frame, 'key', 4096), 'key');
      return { ...(await elections.proclaim(nameOf(frame), key, valueOf(frame, context.apiLimits.valueBytesMax), requestIdOf(frame), context.principal)) };
    },
    resign: async (frame, context) => {
      allowFields(frame, ['name', 'key', 'requestId']);
      const done = await elections.resign(nameOf(frame), required(optionalString(frame, 'key', 4096), 'key'), requestIdOf(frame), context.principal);
      return { resigned: true, revision: done.revision };
    },
    observe: (frame, context, session) => {
      allowFields(frame, ['name', 'encoding']);
      const name = nameOf(frame);
      const encoding = encodingOf(frame);
      let open = observations.get(session);
      if (open === undefined) observations.set(session, (open = new Map()));
      const key = JSON.stringify(frame.id);
      if (open.has(key)) throw new InvalidArgumentError(`an observation with id ${key} is already open`);
      if (open.size >= observationsPerConnectionMax) {
        throw new TooLargeError('observations on one connection', open.size + 1, observationsPerConnectionMax);
      }
      const controller = new AbortController();
      open.set(key, controller);
      const stop = (): void => controller.abort();
      context.closed.addEventListener('abort', stop, { once: true });
      const mine = open;
      elections
        .observe(
          name,
          (change) => context.send({ id: frame.id, type: 'leadership', revision: change.revision, leader: leaderJson(change.leader, encoding) }),
          controller.signal,
          context.principal,
        )
        .catch((error: { code?: string; message?: string }) => {
          if (!context.closed.aborted) {
            context.send({ id: frame.id, type: 'error', error: { code: error.code ?? 'unavailable', message: error.message ?? 'observe ended' } });
          }
        })
        .finally(() => {
          mine.delete(key);
          context.closed.removeEventListener('abort', stop);
        });
      return undefined;
    },
    observeCancel: (frame, context, session) => {
      allowFields(frame, []);
      const controller = observations.get(session)?.get(JSON.stringify(frame.id));
      if (controller === undefined) throw new InvalidArgumentError(`no observation with id ${JSON.stringify(frame.id)}`);
      controller.abort();
      context.send({ id: frame.id, type: 'canceled' });
      return undefined;
    },
    leader: async (frame, context) => {
      allowFields(frame, ['name', 'encoding']);
      const current = await elections.leader(nameOf(frame), context.principal);
      return { revision: current.revision, leader: leaderJson(current.leader, encodingOf(frame)) };
    },
  };
}
