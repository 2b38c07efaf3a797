// A FileIo that crashes part-way: after `budgetBytes` bytes it writes a torn version of the
// current write (a prefix, or a random subset of its 512-byte sectors, as a disk may persist
// pages out of order) and then fails every later call, like a machine losing power.
import type { FileIo } from '../../../src/wal/index.js';
import { realFileIo } from '../../../src/wal/index.js';
import type { SeededRandom } from '../../../src/base/random.js';
import { chance, randomInt } from '../../../src/base/random.js';

export class SimulatedCrash extends Error {
  override name = 'SimulatedCrash';
}

export class CrashingFileIo implements FileIo {
  crashed = false;

  constructor(
    private budgetBytes: number,
    private readonly random: SeededRandom,
  ) {}

  open(path: string, flags: string): number {
    this.check();
    return realFileIo.open(path, flags);
  }

  write(fd: number, data: Uint8Array, position: number): void {
    this.check();
    if (data.length <= this.budgetBytes) {
      this.budgetBytes -= data.length;
      realFileIo.write(fd, data, position);
      return;
    }
    this.crashed = true;
    if (chance(this.random, 0.5)) {
      realFileIo.write(fd, data.subarray(0, this.budgetBytes), position);
    } else {
      // Sectors are aligned to the file, so the first one may be shared with older data.
      let at = 0;
      while (at < data.length) {
        const nextSector = (Math.floor((position + at) / 512) + 1) * 512;
        const sectorEnd = Math.min(data.length, nextSector - position);
        const sector = data.subarray(at, sectorEnd);
        if (chance(this.random, 0.5)) realFileIo.write(fd, sector, position + at);
        at = sectorEnd;
      }
    }
    throw new SimulatedCrash(`crash during a ${data.length}-byte write at ${position}`);
  }

  datasync(fd: number): void {
    this.check();
    realFileIo.datasync(fd);
  }

  close(fd: number): void {
    realFileIo.close(fd);
  }

  rename(from: string, to: string): void {
    this.check();
    realFileIo.rename(from, to);
  }

  unlink(path: string): void {
    this.check();
    // A crash can also land between two unlinks of one release.
    if (randomInt(this.random, 0, 20) === 0) this.crash('crash during a release');
    realFileIo.unlink(path);
  }

  syncDir(dir: string): void {
    this.check();
    realFileIo.syncDir(dir);
  }

  private check(): void {
    if (this.crashed) throw new SimulatedCrash('the machine is down');
  }

  private crash(message: string): never {
    this.crashed = true;
    throw new SimulatedCrash(message);
  }
}
