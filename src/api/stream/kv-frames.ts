// Key-value frames on the stream: put, get, delete and txn, through the same CellApi and the
// same validation as the HTTP routes, answered with the same JSON shapes as api.md's bodies.
import { checkDeleteAll, decodeKey, decodeText, deleteAllParameter, parseTxn, validValue, type Encoding } from '../http/parse.js';
import { rangeJson, txnResultJson } from '../json.js';
import { readKeys } from '../kv-read.js';
import {
  allowFields,
  optionalBoolean,
  optionalInteger,
  optionalOneOf,
  optionalString,
  type FrameRegistry,
} from './frame-registry.js';
import type { Frame, FrameContext } from './types.js';

const encodings: readonly Encoding[] = ['utf8', 'base64'];

function encodingOf(frame: Frame): Encoding {
  return optionalOneOf(frame, 'encoding', encodings) ?? 'utf8';
}


async function put(frame: Frame, context: FrameContext): Promise<Record<string, unknown>> {
  allowFields(frame, ['key', 'value', 'lease', 'ifVersion', 'ifRevision', 'requestId', 'encoding']);
  const encoding = encodingOf(frame);
  const key = decodeKey(frame.fields['key'], encoding, context.apiLimits);
  const value = validValue(decodeText(frame.fields['value'], encoding, 'value'), context.apiLimits);
  const lease = optionalInteger(frame, 'lease', 1);
  const ifVersion = optionalInteger(frame, 'ifVersion', 0);
  const ifRevision = optionalInteger(frame, 'ifRevision', 1);
  const result = await context.cell.put(
    {
      key,
      value,
      ...(lease !== undefined ? { lease } : {}),
      ...(ifVersion !== undefined ? { ifVersion } : {}),
      ...(ifRevision !== undefined ? { ifRevision } : {}),
    },
    optionalString(frame, 'requestId', 128),
    context.principal,
  );
  return { ...result };
}

async function get(frame: Frame, context: FrameContext): Promise<Record<string, unknown>> {
  allowFields(frame, [
    'key', 'prefix', 'limit', 'keysOnly', 'countOnly', 'revision', 'consistency', 'minRevision', 'encoding',
  ]);
  const encoding = encodingOf(frame);
  const key = decodeKey(frame.fields['key'], encoding, context.apiLimits);
  const prefix = optionalBoolean(frame, 'prefix') ?? false;
  const countOnly = optionalBoolean(frame, 'countOnly') ?? false;
  const limit = optionalInteger(frame, 'limit', 0);
  const revision = optionalInteger(frame, 'revision', 0);
  const minRevision = optionalInteger(frame, 'minRevision', 0);
  const consistency = optionalOneOf(frame, 'consistency', ['linearizable', 'serializable'] as const) ?? 'linearizable';
  const result = await readKeys(context.cell, 
    {
      key,
      prefix,
      keysOnly: optionalBoolean(frame, 'keysOnly') ?? false,
      countOnly,
      ...(limit !== undefined ? { limit } : {}),
      ...(revision !== undefined ? { revision } : {}),
    },
    { consistency, ...(minRevision !== undefined ? { minRevision } : {}) },
    context.principal,
  );
  return { ...rangeJson(result, encoding), consistency };
}

async function deleteRange(frame: Frame, context: FrameContext): Promise<Record<string, unknown>> {
  allowFields(frame, ['key', 'prefix', 'ifVersion', 'ifRevision', 'requestId', 'encoding', deleteAllParameter]);
  const encoding = encodingOf(frame);
  const key = decodeKey(frame.fields['key'], encoding, context.apiLimits);
  const prefix = optionalBoolean(frame, 'prefix') ?? false;
  const confirmed = optionalBoolean(frame, deleteAllParameter) ?? false;
  checkDeleteAll({ key, prefix, confirmed }, `"${deleteAllParameter}": true to the frame`);
  const ifVersion = optionalInteger(frame, 'ifVersion', 0);
  const ifRevision = optionalInteger(frame, 'ifRevision', 1);
  const result = await context.cell.deleteRange(
    {
      key,
      prefix,
      ...(ifVersion !== undefined ? { ifVersion } : {}),
      ...(ifRevision !== undefined ? { ifRevision } : {}),
    },
    optionalString(frame, 'requestId', 128),
    context.principal,
  );
  return { ...result };
}

async function txn(frame: Frame, context: FrameContext): Promise<Record<string, unknown>> {
  allowFields(frame, ['compare', 'success', 'failure', 'requestId', 'encoding']);
  const encoding = encodingOf(frame);
  const { compare, success, failure } = frame.fields;
  const request = parseTxn(
    { ...(compare !== undefined ? { compare } : {}), ...(success !== undefined ? { success } : {}), ...(failure !== undefined ? { failure } : {}) },
    encoding,
    context.apiLimits,
  );
  const result = await context.cell.txn(request, optionalString(frame, 'requestId', 128), context.principal);
  return {
    succeeded: result.succeeded,
    revision: result.revision,
    results: result.results.map((r) => txnResultJson(r, encoding)),
  };
}

export function registerKvFrames<Session>(registry: FrameRegistry<Session>): void {
  registry.register('put', put).register('get', get).register('delete', deleteRange).register('txn', txn);
}
