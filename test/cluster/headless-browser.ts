// A headless chromium driven over the DevTools protocol (CDP), for the console's browser test:
// the system's browser (Debian's `chromium`) started with --remote-debugging-port=0, one page
// attached through the browser's WebSocket (flattened sessions), and every console message,
// uncaught exception and browser log entry of that page collected.
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { within } from './harness.js';

/** The browser binary: $CHROMIUM when set (only it), else the first of the usual names on PATH; null when none. */
export function findChromium(): string | null {
  const candidates: string[] = [];
  if (process.env['CHROMIUM'] !== undefined) candidates.push(process.env['CHROMIUM']);
  else {
    for (const dir of (process.env['PATH'] ?? '').split(':')) {
      for (const name of ['chromium', 'chromium-browser', 'google-chrome']) candidates.push(join(dir, name));
    }
  }
  for (const path of candidates) {
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // next
    }
  }
  return null;
}

/** Why a browser test skips when findChromium() found none. */
export function noChromiumReason(): string {
  const named = process.env['CHROMIUM'];
  return `no browser: ${named !== undefined ? `CHROMIUM=${named} is not an executable file` : 'no chromium, chromium-browser or google-chrome on PATH'}`
    + ' (apt-get install chromium, or set CHROMIUM=/path/to/chromium): the console was not tried in a browser';
}

/** What the page said: console errors, uncaught exceptions, browser log errors. */
export interface PageProblem {
  readonly kind: 'console' | 'exception' | 'log';
  readonly text: string;
}

export class HeadlessBrowser {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve(value: any): void; reject(error: Error): void }>();
  readonly problems: PageProblem[] = [];

  private constructor(
    private readonly child: ChildProcess,
    private readonly socket: WebSocket,
    private readonly profile: string,
    private sessionId = '',
  ) {
    socket.on('message', (data) => this.receive(JSON.parse(String(data))));
  }

  static async launch(binary: string, extraArgs: readonly string[] = [], timeoutMs = 20_000): Promise<HeadlessBrowser> {
    const profile = mkdtempSync(join(tmpdir(), 'baton-chromium-'));
    const args = [
      '--headless=new', '--remote-debugging-port=0', `--user-data-dir=${profile}`, '--no-first-run',
      '--no-default-browser-check', '--disable-gpu', '--disable-extensions', '--disable-background-networking',
      '--disable-dev-shm-usage', '--window-size=1280,1600', ...extraArgs, 'about:blank',
    ];
    // Chromium refuses to run as root with its sandbox (CI containers run as root).
    if (process.getuid?.() === 0) args.unshift('--no-sandbox');
    const child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    const url = await new Promise<string>((resolve, reject) => {
      let text = '';
      const timer = setTimeout(() => reject(new Error(`chromium did not print its DevTools URL in ${timeoutMs} ms:\n${text.slice(-2000)}`)), timeoutMs);
      child.stderr?.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        const match = /DevTools listening on (ws:\/\/\S+)/.exec(text);
        if (match !== null) {
          clearTimeout(timer);
          resolve(match[1] as string);
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`chromium exited (${code}) before it listened:\n${text.slice(-2000)}`));
      });
    });
    child.stderr?.resume();
    const socket = new WebSocket(url, { perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    const browser = new HeadlessBrowser(child, socket, profile);
    const { targetId } = await browser.send('Target.createTarget', { url: 'about:blank' }, '');
    const { sessionId } = await browser.send('Target.attachToTarget', { targetId, flatten: true }, '');
    browser.sessionId = sessionId;
    await Promise.all([browser.send('Runtime.enable'), browser.send('Log.enable'), browser.send('Page.enable')]);
    return browser;
  }

  /** A CDP command to the page (or, with sessionId '', to the browser). */
  send(method: string, params: Record<string, unknown> = {}, sessionId = this.sessionId): Promise<any> {
    const id = this.nextId++;
    const message: Record<string, unknown> = { id, method, params };
    if (sessionId !== '') message['sessionId'] = sessionId;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.socket.send(JSON.stringify(message));
    });
  }

  private receive(message: any): void {
    if (typeof message.id === 'number') {
      const waiter = this.waiting.get(message.id);
      this.waiting.delete(message.id);
      if (message.error !== undefined) waiter?.reject(new Error(`${message.error.message} (${message.error.code})`));
      else waiter?.resolve(message.result);
      return;
    }
    const params = message.params ?? {};
    if (message.method === 'Runtime.consoleAPICalled' && (params.type === 'error' || params.type === 'assert')) {
      this.problems.push({ kind: 'console', text: (params.args ?? []).map((arg: any) => arg.value ?? arg.description ?? '').join(' ') });
    } else if (message.method === 'Runtime.exceptionThrown') {
      const details = params.exceptionDetails ?? {};
      this.problems.push({ kind: 'exception', text: `${details.text ?? ''} ${details.exception?.description ?? ''}`.trim() });
    } else if (message.method === 'Log.entryAdded' && params.entry?.level === 'error') {
      this.problems.push({ kind: 'log', text: `${params.entry.text ?? ''} ${params.entry.url ?? ''}`.trim() });
    }
  }

  /** Opens `url` and waits for its load event. */
  async open(url: string, timeoutMs = 15_000): Promise<void> {
    const loaded = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${url} did not load in ${timeoutMs} ms`)), timeoutMs);
      const listener = (data: WebSocket.RawData): void => {
        if (JSON.parse(String(data)).method !== 'Page.loadEventFired') return;
        clearTimeout(timer);
        this.socket.off('message', listener);
        resolve();
      };
      this.socket.on('message', listener);
    });
    const navigated = await this.send('Page.navigate', { url });
    if (navigated.errorText) throw new Error(`navigating to ${url}: ${navigated.errorText}`);
    await loaded;
    // The load event seen may be about:blank's (the target's first page, still loading when the
    // listener went on): wait until the page is the one asked for, fully loaded.
    // (Origin and path: a page may move its own hash or query once it runs.)
    const asked = new URL(url);
    const target = JSON.stringify(asked.origin + asked.pathname);
    await this.waitFor<boolean>(`location.origin + location.pathname === ${target} && document.readyState === 'complete'`, timeoutMs);
  }

  /**
   * The value of a JavaScript expression evaluated in the page (awaited when a promise). An
   * evaluation cut by a navigation (CDP -32000, "Inspected target navigated or closed") is tried
   * again in the new page: a cut expression did not finish, and the tests' expressions (reads, or
   * filling and submitting a form) may run again.
   */
  async evaluate<T>(expression: string): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      let result: any;
      try {
        result = await this.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true });
      } catch (error) {
        const cut = /navigated or closed|context was destroyed|Cannot find context/.test((error as Error).message);
        if (!cut || attempt >= 5) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      if (result.exceptionDetails !== undefined) throw new Error(`evaluating ${expression}: ${result.exceptionDetails.exception?.description ?? result.exceptionDetails.text}`);
      return result.result.value as T;
    }
  }

  /** Polls `expression` until it is truthy; returns its value and the time it took. */
  async waitFor<T>(expression: string, timeoutMs: number, everyMs = 25): Promise<{ value: T; ms: number }> {
    const started = performance.now();
    for (;;) {
      const value = await this.evaluate<T>(expression);
      const ms = performance.now() - started;
      if (value) return { value, ms };
      if (ms > timeoutMs) throw new Error(`not true within ${timeoutMs} ms: ${expression}`);
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  }

  /** A PNG of the whole page. */
  async screenshot(): Promise<Buffer> {
    const { data } = await this.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true });
    return Buffer.from(data as string, 'base64');
  }

  async close(): Promise<void> {
    try {
      await within(this.send('Browser.close', {}, ''), 2000, () => undefined);
    } catch {
      // already going
    }
    this.socket.close();
    if (this.child.exitCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      setTimeout(() => this.child.kill('SIGKILL'), 3000).unref();
      await exited;
    }
    rmSync(this.profile, { recursive: true, force: true });
  }
}
