// Watch limits from the environment (BATON_WATCH_*), named as the flags will be once the node's
// configuration (src/server/config.ts) grows them; until then this is how tests and operators
// tune the bounds. A bad value stops the node with a message naming the variable.
import { defaultWatchLimits, type WatchLimits } from '../../watch/index.js';
import type { WatchServiceOptions } from './types.js';

const names: Readonly<Record<string, keyof WatchLimits>> = {
  BATON_WATCH_BUFFERED_EVENTS_MAX: 'bufferedEventsMax',
  BATON_WATCH_BUFFERED_BYTES_MAX: 'bufferedBytesMax',
  BATON_WATCH_PER_CONNECTION_MAX: 'watchersPerConnectionMax',
  BATON_WATCH_PER_NODE_MAX: 'watchersPerNodeMax',
};

export function watchOptionsFromEnv(env: Readonly<Record<string, string | undefined>>): Partial<WatchServiceOptions> {
  const limits: { -readonly [K in keyof WatchLimits]: number } = { ...defaultWatchLimits };
  let changed = false;
  for (const [name, field] of Object.entries(names)) {
    const text = env[name];
    if (text === undefined || text === '') continue;
    const value = Number(text);
    if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${name} must be an integer >= 1, not "${text}"`);
    limits[field] = value;
    changed = true;
  }
  return changed ? { limits } : {};
}
