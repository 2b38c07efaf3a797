// A bad setting or a refused start (wrong data directory, unknown member): the node stops with
// this message and exit code 2 instead of a stack trace.
export class ConfigError extends Error {
  override name = 'ConfigError';
}
