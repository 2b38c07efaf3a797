export type {
  IncomingSnapshot,
  PeerAddress,
  PeerStats,
  PeerTransportOptions,
  SnapshotMessage,
  TransportLimits,
  TransportLogger,
  TransportStats,
} from './types.js';
export { PeerTransport } from './peer-transport.js';
export { TransportError, TransportErrorReason } from './errors.js';
export { defaultTransportLimits, resolveTransportLimits } from './limits.js';
export { messageBytes, messageTag, writeMessage } from './codec.js';
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
export { reconnectDelayMs } from './backoff.js';
export { WireReader } from './wire-reader.js';
export { WireWriter } from './wire-writer.js';
