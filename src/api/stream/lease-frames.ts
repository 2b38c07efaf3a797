// Lease keepalives on the stream (/v1/stream): `{"id", "type": "keepalive", "ids": [...]}` is
// answered like POST /v1/leases/keepalive, as `{"id", "type": "result", "result": {"revision",
// "leases"}}`. One connection can renew a process's whole session every few seconds without a
// new HTTP request each time. Registered through StreamServerOptions.handlers (no session edits).
import { parseLeaseIds } from '../http/lease-routes.js';
import { type LeaseApi } from '../../lease/api.js';
import { allowFields } from './frame-registry.js';
import type { FrameHandler } from './types.js';

export function keepaliveFrameHandler<Session>(leases: LeaseApi): FrameHandler<Session> {
  return async (frame, context) => {
    allowFields(frame, ['ids']);
    const ids = parseLeaseIds(frame.fields['ids'], leases.keepaliveIdsMax);
    const answer = await leases.keepalive(ids, false, context.principal);
    return { revision: answer.revision, leases: answer.leases };
  };
}
