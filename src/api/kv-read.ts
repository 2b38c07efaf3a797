// A key-value read as every transport answers it: a single-key read of an absent key is
// key_not_found (with the revision it reflects); prefix, range and count reads answer empty.
import { KeyNotFoundError } from '../base/errors.js';
import type { CellApi, RangeRequest, RangeResult, ReadOptions } from './types.js';

export async function readKeys(cell: CellApi, request: RangeRequest, options: ReadOptions, principal: string): Promise<RangeResult> {
  const result = await cell.range(request, options, principal);
  const singleKey = request.prefix !== true && request.rangeEnd === undefined;
  if (singleKey && request.countOnly !== true && result.kvs.length === 0) {
    throw new KeyNotFoundError(`key ${request.key} not found`, { key: request.key, revision: result.revision });
  }
  return result;
}
