// The key flags of the commands that read or write encrypted backups (baton snapshot save,
// status/inspect, restore): --encryption-key-file / --encryption-key-command, as the server takes
// them (also BATON_ENCRYPTION_KEY_FILE / BATON_ENCRYPTION_KEY_COMMAND). None given: null (a
// backup is then written in plaintext, and an encrypted one is refused naming its key id).
import { ConfigError } from '../base/config-error.js';
import { loadKeyring, type Keyring } from '../keys/index.js';

export const keyFlagOptions = {
  'encryption-key-file': { type: 'string' },
  'encryption-key-command': { type: 'string' },
} as const;

export const keyFlagsHelp = `  --encryption-key-file FILE | --encryption-key-command CMD   the key-encryption keys (as the
          server's): save encrypts FILE under the active key; status/inspect/restore read an
          encrypted FILE (refused without them, naming the key id it needs); restore then writes
          the member's store sealed under a new data key (start it with the same key flags)`;

export function keyringFromFlags(values: Record<string, unknown>): Keyring | null {
  const file = (values['encryption-key-file'] as string | undefined) ?? process.env['BATON_ENCRYPTION_KEY_FILE'];
  const command = (values['encryption-key-command'] as string | undefined) ?? process.env['BATON_ENCRYPTION_KEY_COMMAND'];
  const given = (text: string | undefined): text is string => text !== undefined && text !== '';
  if (given(file) && given(command)) throw new ConfigError('--encryption-key-file and --encryption-key-command: give one, not both');
  if (given(file)) return loadKeyring({ file });
  if (given(command)) return loadKeyring({ command });
  return null;
}
