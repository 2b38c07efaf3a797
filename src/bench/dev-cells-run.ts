// `baton dev --cells N` as a bench's subject (bench:moves, bench:router): started on a free
// loopback port block, its ready line read, started again elsewhere when a port was taken (exit
// 2) or a cell was not ready in time on a loaded machine (exit 1).
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export interface DevCellsRun {
  readonly child: ChildProcess;
  /** The `Baton dev cells ready:` line (the router's URL and each cell's endpoints). */
  readonly line: string;
  /** The router's port (the block's base). */
  readonly base: number;
}

export interface DevCellsOptions {
  readonly cli: string;
  readonly cells: number;
  readonly dataDir: string;
  /** Every line the child prints (stdout and stderr), as it comes. */
  readonly onLine?: (line: string) => void;
}

export async function startDevCells(options: DevCellsOptions): Promise<DevCellsRun> {
  for (let attempt = 0; attempt < 6; attempt++) {
    const base = 20_000 + 500 * Math.floor(Math.random() * 80);
    const child = spawn(process.execPath, [options.cli, 'dev', '--cells', String(options.cells), '--base-port', String(base), '--data-dir', join(options.dataDir, String(base))], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const line = await new Promise<string | null>((resolveLine, reject) => {
      const timer = setTimeout(() => reject(new Error('baton dev: no ready line in 120 s')), 120_000);
      const take = (chunk: Buffer): void => {
        out += chunk.toString('utf8');
        let cut;
        while ((cut = out.indexOf('\n')) >= 0) {
          const text = out.slice(0, cut);
          out = out.slice(cut + 1);
          if (text.includes('failed to start')) process.stderr.write(`  ${text.slice(0, 300)}\n`);
          options.onLine?.(text);
          if (text.startsWith('Baton dev cells ready:')) {
            clearTimeout(timer);
            resolveLine(text);
          }
        }
      };
      child.stdout?.on('data', take);
      child.stderr?.on('data', take);
      child.once('exit', (code) => {
        clearTimeout(timer);
        if (code === 2 || code === 1) resolveLine(null);
        else reject(new Error(`baton dev exited ${code}`));
      });
    });
    if (line !== null) return { child, line, base };
  }
  throw new Error('baton dev did not start on 6 port blocks');
}

export async function stopDevCells(run: DevCellsRun): Promise<void> {
  if (run.child.exitCode !== null) return;
  run.child.kill('SIGTERM');
  await new Promise((resolve) => run.child.once('exit', resolve));
}
