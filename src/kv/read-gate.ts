// Renewals first under overload. Keepalives are cheap and losing one costs a session (and every
// lock it holds), while a big read can be retried: so range reads get a bounded concurrency
// budget of their own, lists (prefix reads) a smaller one, and past it they are refused at once
// with 429 overloaded. Keepalives never pass through this gate; they have their own budget in
// lease-service.ts.
import { assert } from '../base/assert.js';
import { OverloadedError } from '../base/errors.js';
import * as limits from '../base/limits.js';

export interface ReadGateOptions {
  /** Range reads (single keys and lists) being answered at once. */
  readonly readsInFlightMax: number;
  /** Of those, prefix reads (lists): the expensive ones, shed first. */
  readonly listsInFlightMax: number;
}

export const defaultReadGateOptions: ReadGateOptions = {
  readsInFlightMax: limits.readsInFlightMax,
  listsInFlightMax: limits.listsInFlightMax,
};

export class ReadGate {
  private reads = 0;
  private lists = 0;

  constructor(private readonly options: ReadGateOptions = defaultReadGateOptions) {
    assert(options.listsInFlightMax <= options.readsInFlightMax, 'lists are a share of reads');
  }

  /** Returns the release function, or throws OverloadedError (429) without waiting. */
  enter(list: boolean): () => void {
    if (this.reads >= this.options.readsInFlightMax || (list && this.lists >= this.options.listsInFlightMax)) {
      throw new OverloadedError(`too many ${list ? 'lists' : 'reads'} in flight; retry shortly`, {
        limit: list ? this.options.listsInFlightMax : this.options.readsInFlightMax,
      });
    }
    this.reads++;
    if (list) this.lists++;
    let released = false;
    return () => {
      assert(!released, 'a read is released once');
      released = true;
      this.reads--;
      if (list) this.lists--;
    };
  }
}
