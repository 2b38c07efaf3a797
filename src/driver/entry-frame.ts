// Commands travel in log entries wrapped with the proposing node's proposal id, so that the node
// that accepted a client's request (leader or follower) recognizes the command when it applies
// it, whichever leader appended it. The state machine sees only the command bytes.
import { assert } from '../base/assert.js';

const frameVersion = 1;
export const proposalIdBytes = 16;
const headerBytes = 1 + proposalIdBytes;

export function frameCommand(proposalId: Uint8Array, command: Uint8Array): Uint8Array {
  assert(proposalId.byteLength === proposalIdBytes, 'proposal ids are 16 bytes');
  const data = new Uint8Array(headerBytes + command.byteLength);
  data[0] = frameVersion;
  data.set(proposalId, 1);
  data.set(command, headerBytes);
  return data;
}

/** The prefix that names a framed command (version and proposal id): what a refusal sends back. */
export function frameHead(data: Uint8Array): Uint8Array {
  return data.subarray(0, Math.min(headerBytes, data.byteLength));
}

/** The proposal id a frame head (from a peer, so checked) names, or null when it is not one. */
export function proposalIdOfHead(head: Uint8Array): string | null {
  if (head.byteLength < headerBytes || head[0] !== frameVersion) return null;
  return Buffer.from(head.buffer, head.byteOffset + 1, proposalIdBytes).toString('hex');
}

/** Splits a framed entry; null for entries that carry no command (Raft no-ops). */
export function unframeCommand(data: Uint8Array): { proposalId: string; command: Uint8Array } | null {
  if (data.byteLength === 0) return null;
  assert(data[0] === frameVersion && data.byteLength >= headerBytes, 'a command entry is framed');
  return {
    proposalId: Buffer.from(data.buffer, data.byteOffset + 1, proposalIdBytes).toString('hex'),
    command: data.subarray(headerBytes),
  };
}
