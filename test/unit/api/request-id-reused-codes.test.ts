// request_id_reused is one code across the stack: the client rebuilds the typed error (never
// retried) and the etcd facade answers FAILED_PRECONDITION.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { errorFromWire } from '../../../src/client/errors.js';
import { RequestIdReusedError } from '../../../src/base/errors.js';
import { toGrpcError } from '../../../src/api/grpc/errors.js';

test('the client and the gRPC facade know request_id_reused', () => {
  const error = errorFromWire({ code: 'request_id_reused', message: 'reused', requestId: 'r', kind: 'put', key: '/a' });
  assert.ok(error instanceof RequestIdReusedError);
  assert.equal(error.code, 'request_id_reused');
  assert.equal(error.retryable, false);
  assert.equal(error.details['key'], '/a');
  const grpc = toGrpcError(new RequestIdReusedError('r', { kind: 'put', key: '/a' }, { kind: 'delete', key: '/b' }), () => {});
  assert.equal(grpc.code, status.FAILED_PRECONDITION);
});
