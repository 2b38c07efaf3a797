// The etcd facade maps errors by code through the one table (errorTable.grpc) and by the stable
// `reason` detail where one code needs two etcd answers; it never reads the message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import {
  BatonError,
  errorTable,
  FutureRevisionError,
  InvalidArgumentError,
  TooLargeError,
  wireCode,
  type ErrorCode,
} from '../../../src/base/errors.js';
import { etcdMessages, toGrpcError } from '../../../src/api/grpc/errors.js';
import { errorFromWire, UnknownCodeError } from '../../../src/client/errors.js';

class CodedError extends BatonError {
  readonly code: ErrorCode;
  constructor(code: ErrorCode) {
    super(`a ${code} error`);
    this.code = code;
  }
}

test('every code maps to its gRPC status through the table', () => {
  for (const [code, row] of Object.entries(errorTable)) {
    const answer = toGrpcError(new CodedError(code as ErrorCode), () => assert.fail('nothing is logged'));
    assert.equal(answer.code, row.grpc, code);
    assert.match(answer.details, /^etcdserver: /, code);
  }
});

test('a reason detail, not the message, picks etcd\'s special answers', () => {
  const ops = toGrpcError(new TooLargeError('anything', 200, 128, 'too_many_operations'), () => {});
  assert.deepEqual([ops.code, ops.details], [status.INVALID_ARGUMENT, etcdMessages.tooManyOps]);
  const wording = toGrpcError(new TooLargeError('txn operations and compares', 200, 128), () => {});
  assert.notEqual(wording.details, etcdMessages.tooManyOps, 'the words of a message decide nothing');
  const future = toGrpcError(new FutureRevisionError(10, 5), () => {});
  assert.deepEqual([future.code, future.details], [status.OUT_OF_RANGE, etcdMessages.futureRevision]);
  // Passed on by a follower: only code and details survive, and they suffice.
  const passed = errorFromWire({ code: 'invalid_argument', message: 'x', reason: 'future_revision', revision: 10, currentRevision: 5 });
  assert.equal(toGrpcError(passed, () => {}).code, status.OUT_OF_RANGE);
  const plain = toGrpcError(new InvalidArgumentError('revision 10 is in the future'), () => {});
  assert.equal(plain.code, status.INVALID_ARGUMENT);
  const tooMany = errorFromWire({ code: 'too_large', message: 'm', limit: 128, size: 200, reason: 'too_many_operations' });
  assert.ok(tooMany instanceof TooLargeError);
  assert.equal(toGrpcError(tooMany, () => {}).details, etcdMessages.tooManyOps);
});

test('an unknown code is UNKNOWN; anything not a BatonError is INTERNAL and logged', () => {
  const unknown = new UnknownCodeError('from_the_future', 'newer server', {});
  assert.equal(unknown.code, wireCode('from_the_future'));
  assert.equal(toGrpcError(unknown, () => assert.fail('not logged')).code, status.UNKNOWN);
  const logged: unknown[] = [];
  const bug = toGrpcError(new TypeError('x is undefined'), (error) => logged.push(error));
  assert.equal(bug.code, status.INTERNAL);
  assert.equal(logged.length, 1);
});
