// The key browser: the keys under a prefix, kept current by the watch feed, and one key's
// revision history read back through `?revision=` (older revisions until the key's creation or
// the compaction point).
import { ApiError, describe, getJson, kvPath, type Kv, type Range, type WatchEvent } from './api.js';
import { byId, el, row, short, showError, table } from './dom.js';

const listLimit = 500;
/** Values are read for the first keys only: a value may be up to 1 MiB. */
const valuesRead = 50;
const historySteps = 25;

export class KeysView {
  private prefix = '/';
  private readonly kvs = new Map<string, Kv>();
  /** Keys listed without their value (past the first 50); an event or a click reads it. */
  private readonly unread = new Set<string>();
  private more = false;
  private prefixListener: (prefix: string) => void = () => {};

  constructor() {
    const form = byId<HTMLFormElement>('keys-form');
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const value = byId<HTMLInputElement>('keys-prefix').value.trim();
      this.prefix = value.startsWith('/') ? value : `/${value}`;
      this.prefixListener(this.prefix);
    });
  }

  /** Tells `listener` the prefix now and at every change (the live feed follows it and reloads). */
  onPrefix(listener: (prefix: string) => void): void {
    this.prefixListener = listener;
    listener(this.prefix);
  }

  /**
   * Reads the keys under the prefix (at most 500, values of the first 50, both at one revision)
   * and returns that revision, from which the live feed continues; null when refused.
   */
  async load(): Promise<number | null> {
    const target = byId('keys-list');
    try {
      const keys = await getJson<Range>(`${kvPath(this.prefix)}?prefix=true&keysOnly=true&limit=${listLimit}`);
      const values = await getJson<Range>(`${kvPath(this.prefix)}?prefix=true&limit=${valuesRead}&revision=${keys.revision}`);
      this.kvs.clear();
      this.unread.clear();
      for (const kv of keys.kvs) {
        this.kvs.set(kv.key, kv);
        this.unread.add(kv.key);
      }
      for (const kv of values.kvs) {
        this.kvs.set(kv.key, kv);
        this.unread.delete(kv.key);
      }
      this.more = keys.more;
      this.render();
      return keys.revision;
    } catch (error) {
      showError(target, describe(error));
      return null;
    }
  }

  onEvents(events: readonly WatchEvent[]): void {
    let changed = false;
    for (const event of events) {
      if (!event.kv.key.startsWith(this.prefix)) continue;
      this.unread.delete(event.kv.key);
      if (event.type === 'put') this.kvs.set(event.kv.key, event.kv);
      else this.kvs.delete(event.kv.key);
      changed = true;
    }
    if (changed) this.render();
  }

  private render(): void {
    const keys = [...this.kvs.keys()].sort();
    const rows = keys.map((key) => {
      const kv = this.kvs.get(key) as Kv;
      const link = el('button', { type: 'button', class: 'link' }, key);
      link.addEventListener('click', () => void this.history(key));
      const value = this.unread.has(key) ? el('span', { class: 'note' }, '(not read: click the key)') : el('code', {}, short(kv.value));
      return row({ 'data-key': key }, link, value, String(kv.version), String(kv.modRevision), kv.lease === 0 ? '' : String(kv.lease));
    });
    const note = this.more ? el('p', { class: 'note' }, `showing the first ${listLimit} keys; narrow the prefix`) : '';
    byId('keys-list').replaceChildren(
      el('p', { class: 'note' }, `${keys.length} key(s) under ${this.prefix}`),
      table(['key', 'value', 'version', 'mod revision', 'lease'], rows, `no key under ${this.prefix}`),
      note,
    );
  }

  /** The key's versions, newest first: each read at the revision just before the previous one. */
  private async history(key: string): Promise<void> {
    const target = byId('key-history');
    target.replaceChildren(el('p', {}, `reading the history of ${key}…`));
    const versions: Kv[] = [];
    let end = '';
    try {
      let kv = (await getJson<Range>(kvPath(key))).kvs[0];
      while (kv !== undefined && versions.length < historySteps) {
        versions.push(kv);
        if (kv.version <= 1) {
          end = `created at revision ${kv.createRevision}`;
          break;
        }
        kv = (await getJson<Range>(`${kvPath(key)}?revision=${kv.modRevision - 1}`)).kvs[0];
      }
      if (end === '' && versions.length >= historySteps) end = `the ${historySteps} newest versions`;
    } catch (error) {
      if (error instanceof ApiError && error.code === 'compacted') end = 'older revisions are compacted';
      else if (error instanceof ApiError && error.code === 'key_not_found' && versions.length === 0) end = 'the key does not exist now';
      else end = describe(error);
    }
    const rows = versions.map((kv) => row({}, String(kv.modRevision), String(kv.version), el('code', {}, short(kv.value, 200)), kv.lease === 0 ? '' : String(kv.lease)));
    target.replaceChildren(el('h3', {}, `history of ${key}`), table(['revision', 'version', 'value', 'lease'], rows, 'no version'), el('p', { class: 'note' }, end));
  }
}
