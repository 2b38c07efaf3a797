// `baton completion bash|zsh`: a completion script made from the command table, so it offers
// exactly the commands and flags that exist. Both scripts find the command as the first word that
// is not a global flag or its value, as the CLI itself does (global-flags.ts).
//   bash: source <(baton completion bash)     zsh: source <(baton completion zsh)
import { nodeFlags } from '../node/config.js';
import {
  commandTable, fileFlags, globalBooleanFlags, globalValueFlags, writeOutValues, type CommandRow,
} from './command-table.js';

const usage = `usage: baton completion bash|zsh
  Prints a shell completion script for baton. Load it in the current shell, or from ~/.bashrc / ~/.zshrc:
    source <(baton completion bash)
    source <(baton completion zsh)`;

export function completionCommand(args: readonly string[]): number {
  if (args.includes('--help') || args.includes('-h')) {
    console.log(usage);
    return 0;
  }
  const shell = args[0];
  if (args.length !== 1 || (shell !== 'bash' && shell !== 'zsh')) {
    console.error(`baton completion: expected bash or zsh\n\n${usage}`);
    return 2;
  }
  process.stdout.write(shell === 'bash' ? bashScript() : zshScript());
  return 0;
}

const globalFlags = [...globalValueFlags, ...globalBooleanFlags];

/** The flags a command takes: its own, the common ones for client commands, and --help. */
export function flagsOf(row: CommandRow): string[] {
  const own = row.name === 'server' ? nodeFlags.map((flag) => `--${flag}`) : row.flags;
  return [...own, ...(row.client ? globalFlags : []), '--help'];
}

/** `case` branches, one per command: flags and actions as shell words. */
function caseBranches(indent: string): string {
  return commandTable.map((row) => `${indent}${row.name}) flags="${flagsOf(row).join(' ')}"; actions="${(row.actions ?? []).join(' ')}" ;;`)
    .join('\n');
}

function bashScript(): string {
  return `# baton completion for bash: source <(baton completion bash)
_baton() {
  local cur prev cmd="" cmd_at=0 i w flags="" actions=""
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    case "$w" in
      ${globalValueFlags.join('|')}) ((i++)) ;;
      -*) ;;
      *) cmd="$w"; cmd_at=$i; break ;;
    esac
  done
  case "$prev" in
    -w|--write-out) COMPREPLY=($(compgen -W "${writeOutValues.join(' ')}" -- "$cur")); return ;;
    ${fileFlags.join('|')}) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  if [[ -z "$cmd" ]]; then
    if [[ "$cur" == -* ]]; then
      COMPREPLY=($(compgen -W "${[...globalFlags, '--help', '--version'].join(' ')}" -- "$cur"))
    else
      COMPREPLY=($(compgen -W "${commandTable.map((row) => row.name).join(' ')}" -- "$cur"))
    fi
    return
  fi
  case "$cmd" in
${caseBranches('    ')}
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
  elif [[ -n "$actions" && $COMP_CWORD -eq $((cmd_at + 1)) ]]; then
    COMPREPLY=($(compgen -W "$actions" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -F _baton baton
`;
}

function zshScript(): string {
  const described = commandTable.map((row) => `    '${row.name}:${row.summary.replaceAll("'", '')}'`).join('\n');
  return `#compdef baton
# baton completion for zsh: source <(baton completion zsh), or save as _baton on $fpath
_baton() {
  local -a commands
  commands=(
${described}
  )
  local cmd="" flags="" actions="" prev="\${words[CURRENT-1]}"
  local -i i cmd_at=0
  for ((i = 2; i < CURRENT; i++)); do
    case "\${words[i]}" in
      ${globalValueFlags.join('|')}) ((i++)) ;;
      -*) ;;
      *) cmd="\${words[i]}"; cmd_at=$i; break ;;
    esac
  done
  case "$prev" in
    -w|--write-out) compadd -- ${writeOutValues.join(' ')}; return ;;
    ${fileFlags.join('|')}) _files; return ;;
  esac
  if [[ -z "$cmd" ]]; then
    if [[ "$PREFIX" == -* ]]; then
      compadd -- ${[...globalFlags, '--help', '--version'].join(' ')}
    else
      _describe 'command' commands
    fi
    return
  fi
  case "$cmd" in
${caseBranches('    ')}
  esac
  if [[ "$PREFIX" == -* ]]; then
    compadd -- \${=flags}
  elif [[ -n "$actions" && $CURRENT -eq $((cmd_at + 1)) ]]; then
    compadd -- \${=actions}
  else
    _files
  fi
}
if [[ "$funcstack[1]" == "_baton" ]]; then
  _baton "$@"
else
  compdef _baton baton
fi
`;
}
