// The Raft peer transport (issue 6). Typical wiring in the server:
//
//   const transport = await PeerTransport.start({
//     memberId, clusterId, listen: { host, port }, peers,          // peers: Map<id, {host, port}>
//     onMessages: (batch) => { for (const m of batch) raft.step(m); },
//     onSnapshot: (incoming) => snapshots.receive(incoming),      // stream to disk, then step it
//     reportUnreachable: (to) => raft.reportUnreachable(to),
//     reportSnapshot: (to, ok) => raft.reportSnapshot(to, ok),
//     logger,
//   });
//   transport.send(ready.messages);           // never blocks; batched per event-loop turn
//   transport.sendSnapshot(message, { totalBytes, checksum, chunks: (from) => fileChunks(from) });
//   transport.addPeer(id, address) / removePeer(id) on committed membership changes
//   await transport.close();
//
// Wire format: the comment at the top of codec.ts.
export type {
  IncomingSnapshot,
  OutgoingSnapshot,
  PeerAddress,
  PeerStats,
  PeerTransportOptions,
  SnapshotMessage,
  TransportLimits,
  TransportLogger,
  TransportStats,
} from './types.js';
export { PeerTransport } from './peer-transport.js';
export { certificateUris, peerIdentity, type PeerTls } from './peer-tls.js';
export { encodeLeaseFrame, readLeaseFrameBody, type LeasePeerMessage } from './lease-frames.js';
export { TransportError, TransportErrorReason } from './errors.js';
export { defaultTransportLimits, resolveTransportLimits } from './limits.js';
export { messageBytes, messageBytesIn, messageTag, writeMessage } from './codec.js';
export { readMessage } from './codec-read.js';
export {
  FrameKind,
  FrameReader,
  encodeMessageFrames,
  frameHeaderBytes,
  readMessagesBody,
  type Frame,
  type FramePieces,
} from './frame.js';
export { Channel, protocolVersion, type Handshake } from './handshake.js';
export { storeFormat3Version, storeFormat4Version, storeFormat5Version } from './protocol.js';
export { reconnectDelayMs } from './backoff.js';
export { WireReader } from './wire-reader.js';
export { WireWriter } from './wire-writer.js';
