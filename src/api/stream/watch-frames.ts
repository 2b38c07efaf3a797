// Watch frames on the stream: `watch` creates one (answered `created`, then `events` frames),
// `cancel` ends one without touching the others (answered `canceled`), `progress` asks for a
// progress notification now. Each watch is named by the id of the frame that created it.
import { InvalidArgumentError } from '../../base/errors.js';
import type { Watcher, WatchConnection } from '../../watch/index.js';
import type { WireEncoding } from './event-json.js';
import {
  allowFields,
  optionalBoolean,
  optionalInteger,
  optionalOneOf,
  type FrameRegistry,
} from './frame-registry.js';
import type { Frame, FrameContext, WatchTag } from './types.js';
import { watchRequest } from './watch-request.js';
import type { WatchService } from './watch-service.js';
import { decodeKey } from '../http/parse.js';

export interface StreamWatch {
  readonly watcher: Watcher<WatchTag>;
  readonly timer: ReturnType<typeof setInterval> | null;
  /** `{"id":…,"type":"events",` : the frame head, spliced onto the shared batch JSON. */
  readonly eventsHead: string;
  readonly encoding: WireEncoding;
  readonly prevKv: boolean;
}

/** What the watch frames need from the session they run in. */
export interface WatchSession {
  readonly service: WatchService;
  readonly connection: WatchConnection<WatchTag>;
  /** Live watches by the JSON text of their id. */
  readonly watches: Map<string, StreamWatch>;
}

export function watchKey(id: string | number): string {
  return JSON.stringify(id);
}

function create(frame: Frame, context: FrameContext, session: WatchSession): undefined {
  allowFields(frame, ['key', 'prefix', 'startRevision', 'prevKv', 'filter', 'progressMs', 'encoding']);
  const mapKey = watchKey(frame.id);
  if (session.watches.has(mapKey)) {
    throw new InvalidArgumentError(`a watch with id ${mapKey} is already open on this stream`);
  }
  const encoding = optionalOneOf<WireEncoding>(frame, 'encoding', ['utf8', 'base64']) ?? 'utf8';
  const { spec, progressMs } = watchRequest(
    {
      key: decodeKey(frame.fields['key'], encoding, context.apiLimits),
      prefix: optionalBoolean(frame, 'prefix') ?? false,
      startRevision: optionalInteger(frame, 'startRevision', 0) ?? 0,
      prevKv: optionalBoolean(frame, 'prevKv') ?? false,
      filter: optionalOneOf(frame, 'filter', ['put', 'delete'] as const),
      progressMs: optionalInteger(frame, 'progressMs', 0) ?? 0,
      encoding,
    },
    session.service.options,
  );
  session.service.checkServing();
  session.service.checkOwned(spec);
  const { hub } = session.service;
  const watcher = hub.create(session.connection, { id: frame.id, key: mapKey }, spec);
  const timer = progressMs > 0 ? setInterval(() => hub.progress(watcher), progressMs) : null;
  session.watches.set(mapKey, {
    watcher,
    timer,
    eventsHead: `{"id":${mapKey},"type":"events",`,
    encoding,
    prevKv: spec.prevKv,
  });
  // Sent before any events frame: the connection's pump writes on a later turn.
  context.send({ id: frame.id, type: 'created', startRevision: watcher.startRevision, revision: hub.revision });
  return undefined;
}

function cancel(frame: Frame, context: FrameContext, session: WatchSession): undefined {
  allowFields(frame, []);
  const watch = session.watches.get(watchKey(frame.id));
  if (watch === undefined) throw new InvalidArgumentError(`no open watch with id ${watchKey(frame.id)}`);
  const lastRevision = session.service.hub.cancel(watch.watcher);
  forgetWatch(session, watchKey(frame.id));
  context.send({ id: frame.id, type: 'canceled', lastRevision });
  return undefined;
}

function progress(frame: Frame, _context: FrameContext, session: WatchSession): undefined {
  allowFields(frame, []);
  const watch = session.watches.get(watchKey(frame.id));
  if (watch === undefined) throw new InvalidArgumentError(`no open watch with id ${watchKey(frame.id)}`);
  session.service.hub.progress(watch.watcher);
  return undefined;
}

/** Drops a watch from the session (it ended or was canceled); its timer stops. */
export function forgetWatch(session: WatchSession, key: string): void {
  const watch = session.watches.get(key);
  if (watch === undefined) return;
  if (watch.timer !== null) clearInterval(watch.timer);
  session.watches.delete(key);
}

export function registerWatchFrames<Session extends WatchSession>(registry: FrameRegistry<Session>): void {
  registry.register('watch', create).register('cancel', cancel).register('progress', progress);
}
