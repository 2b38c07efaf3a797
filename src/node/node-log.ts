// The node's log lines: human-readable text (`[n1] message`, for `baton dev` on a terminal) or one
// JSON object per line (`--log-format json`, for log collectors), both with the level, and the JSON
// with the time, cell and member in every line. An own ~30 lines rather than pino: the node logs
// a few lines per minute, so a fast logger buys nothing, and the format stays in one place.
// Nothing secret reaches a log line: the node logs events, never a request's token, key or value.
import type { LogFields, NodeLogger } from './node.js';

export type LogFormat = 'text' | 'json';
type Level = 'debug' | 'info' | 'warn' | 'error';
const levels: readonly Level[] = ['debug', 'info', 'warn', 'error'];

export function createNodeLogger(options: {
  readonly format: LogFormat;
  readonly level: Level;
  readonly cell: string;
  readonly member: string;
  readonly out?: (line: string) => void;
  readonly err?: (line: string) => void;
  readonly now?: () => Date;
}): NodeLogger {
  const out = options.out ?? ((line: string) => process.stdout.write(line));
  const err = options.err ?? ((line: string) => process.stderr.write(line));
  const now = options.now ?? (() => new Date());
  const enabled = (level: Level): boolean => levels.indexOf(level) >= levels.indexOf(options.level);
  const write = (level: Level, message: string, fields?: LogFields): void => {
    if (!enabled(level)) return;
    const sink = level === 'info' || level === 'debug' ? out : err;
    if (options.format === 'json') {
      sink(`${JSON.stringify({ time: now().toISOString(), level, cell: options.cell, member: options.member, msg: message, ...fields })}\n`);
    } else {
      const extra = fields === undefined ? '' : Object.entries(fields).map(([key, value]) => ` ${key}=${value}`).join('');
      sink(`[${options.member}] ${level === 'info' ? '' : `${level.toUpperCase()} `}${message}${extra}\n`);
    }
  };
  return {
    info: (message, fields) => write('info', message, fields),
    warn: (message, fields) => write('warn', message, fields),
    error: (message, fields) => write('error', message, fields),
  };
}
