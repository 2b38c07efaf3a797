// A progress bar on a terminal for long downloads (`baton snapshot save`): drawn on stderr only
// when stderr is a TTY (scripts and pipes see nothing), at most ten times a second, and erased at
// the end so the command's own output line stands alone. The total is an estimate when the server
// gives one (the bar stops at 99% until the end); without it, bytes and rate only.
export interface Progress {
  add(bytes: number): void;
  done(): void;
}

const width = 30;
const redrawMs = 100;

export function progressBar(label: string, estimateBytes: number | null, stream: NodeJS.WriteStream = process.stderr, now: () => number = Date.now): Progress {
  if (stream.isTTY !== true) return { add: () => {}, done: () => {} };
  const started = now();
  let bytes = 0;
  let drawnAt = 0;
  const draw = (): void => {
    const seconds = Math.max((now() - started) / 1000, 0.001);
    const rate = `${mib(bytes / seconds)}/s`;
    let line: string;
    if (estimateBytes !== null && estimateBytes > 0) {
      const fraction = Math.min(bytes / estimateBytes, 0.99);
      const filled = Math.round(fraction * width);
      line = `${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${Math.floor(fraction * 100)}% ${mib(bytes)} of ~${mib(estimateBytes)}, ${rate}`;
    } else {
      line = `${label} ${mib(bytes)}, ${rate}`;
    }
    stream.write(`\r${line}\x1b[K`);
  };
  return {
    add(more) {
      bytes += more;
      const at = now();
      if (at - drawnAt >= redrawMs) {
        drawnAt = at;
        draw();
      }
    },
    done() {
      stream.write('\r\x1b[K');
    },
  };
}

function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
