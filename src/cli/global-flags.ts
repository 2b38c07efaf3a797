// Flags before the command, as etcdctl and kubectl take them: `baton --endpoints URL get K` is
// `baton get K --endpoints URL`. Pure: argv in, the command and its arguments out. The global
// flags move to the front of the command's own arguments, so a `--` later on (baton lock NAME --
// CMD ...) still ends baton's flags where the user put it.
import { globalBooleanFlags, globalValueFlags } from './command-table.js';

export type SplitArgv =
  | { readonly type: 'command'; readonly name: string; readonly args: readonly string[] }
  | { readonly type: 'help' }
  | { readonly type: 'version' }
  | { readonly type: 'usage'; readonly message: string };

const valueFlags: readonly string[] = globalValueFlags;
const booleanFlags: readonly string[] = globalBooleanFlags;

export function splitGlobalFlags(argv: readonly string[]): SplitArgv {
  const globals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--help' || arg === '-h' || arg === 'help') return { type: 'help' };
    if (arg === '--version') return { type: 'version' };
    if (!arg.startsWith('-')) return { type: 'command', name: arg, args: [...globals, ...argv.slice(i + 1)] };
    const name = flagName(arg);
    if (booleanFlags.includes(name)) {
      globals.push(arg);
    } else if (valueFlags.includes(name)) {
      const inline = arg !== name; // --endpoints=URL, -wjson, -w=json
      const value = inline ? undefined : argv[i + 1];
      if (!inline && (value === undefined || value.startsWith('-'))) {
        return { type: 'usage', message: `${arg} needs a value` };
      }
      globals.push(arg);
      if (!inline) {
        globals.push(value as string);
        i++;
      }
    } else {
      return { type: 'usage', message: `unknown flag ${arg} before the command` };
    }
  }
  return { type: 'usage', message: 'no command given' };
}

/** `--endpoints=URL` → `--endpoints`; `-wjson` and `-w=json` → `-w`. */
function flagName(arg: string): string {
  if (arg.startsWith('--')) return arg.split('=', 1)[0] as string;
  return arg.slice(0, 2);
}
