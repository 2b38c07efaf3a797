// The refusal the tenant-quota unit tests expect from a call: it must throw quota_exceeded.
import assert from 'node:assert/strict';
import { QuotaExceededError } from '../../../src/base/errors.js';

/** Runs `run` and returns the QuotaExceededError it throws; fails the test if it throws anything else or nothing. */
export function refusal(run: () => unknown): QuotaExceededError {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof QuotaExceededError, String(error));
    return error;
  }
  assert.fail('expected quota_exceeded');
}
