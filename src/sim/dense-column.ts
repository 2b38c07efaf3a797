// A number per log index, stored densely: the checkers record something for nearly every index,
// and plain packed arrays keep that cheap for the garbage collector (Maps of 10^5 entries do not).
import { assert } from '../base/assert.js';

export const noValue = -1;

export class DenseColumn {
  private readonly values: number[] = [];

  get(index: number): number {
    return this.values[index] ?? noValue;
  }

  set(index: number, value: number): void {
    assert(Number.isSafeInteger(index) && index >= 0, 'a column index is a log index');
    const values = this.values;
    // Fill the gap first, so the array never turns holey (or into a dictionary).
    while (values.length < index) values.push(noValue);
    values[index] = value;
  }
}
