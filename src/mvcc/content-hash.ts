// A deterministic 64-bit content hash (two independent FNV-1a lanes) for comparing replicas and
// checking snapshot streams. Not cryptographic: it catches divergence and damage, not attackers.
import { u64Bytes } from './bytes.js';

export class ContentHasher {
  private a = 0x811c9dc5;
  private b = 0x050c5d1f;

  update(bytes: Uint8Array): this {
    let a = this.a;
    let b = this.b;
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[i] as number;
      a = Math.imul(a ^ byte, 0x01000193);
      b = Math.imul(b ^ byte, 0x01000193 ^ 0x5bd1e995);
    }
    this.a = a;
    this.b = b;
    return this;
  }

  /** Length-prefixed, so ("ab","c") and ("a","bc") differ. */
  updateField(bytes: Uint8Array): this {
    return this.updateNumber(bytes.length).update(bytes);
  }

  updateNumber(value: number): this {
    return this.update(u64Bytes(value));
  }

  digest(): string {
    return hex32(this.a) + hex32(this.b);
  }

  digest32(): number {
    return (this.a ^ Math.imul(this.b, 0x9e3779b1)) >>> 0;
  }
}

function hex32(value: number): string {
  return (value >>> 0).toString(16).padStart(8, '0');
}
