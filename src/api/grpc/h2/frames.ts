// HTTP/2 framing (RFC 9113 §4, §6): frame types, flags, error codes, settings, and the 9-byte
// frame header. Pure helpers; the connection (connection.ts) decides what a frame means.

export const FrameType = {
  data: 0x0,
  headers: 0x1,
  priority: 0x2,
  rstStream: 0x3,
  settings: 0x4,
  pushPromise: 0x5,
  ping: 0x6,
  goaway: 0x7,
  windowUpdate: 0x8,
  continuation: 0x9,
} as const;

export const Flag = {
  endStream: 0x1,
  ack: 0x1,
  endHeaders: 0x4,
  padded: 0x8,
  priority: 0x20,
} as const;

export const H2Error = {
  noError: 0x0,
  protocol: 0x1,
  internal: 0x2,
  flowControl: 0x3,
  streamClosed: 0x5,
  frameSize: 0x6,
  refusedStream: 0x7,
  cancel: 0x8,
  compression: 0x9,
  enhanceYourCalm: 0xb,
} as const;
export type H2Error = (typeof H2Error)[keyof typeof H2Error];

export const Setting = {
  headerTableSize: 0x1,
  enablePush: 0x2,
  maxConcurrentStreams: 0x3,
  initialWindowSize: 0x4,
  maxFrameSize: 0x5,
  maxHeaderListSize: 0x6,
} as const;

export const frameHeaderBytes = 9;
/** The smallest SETTINGS_MAX_FRAME_SIZE, and the default: what every peer must accept. */
export const frameBytesDefault = 16_384;
export const frameBytesLimit = 16_777_215;
export const windowBytesMax = 2 ** 31 - 1;
export const windowBytesDefault = 65_535;
export const clientPreface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** One frame's 9-byte header followed by its payload, in one buffer. */
export function frame(
  type: number,
  flags: number,
  streamId: number,
  payload: Uint8Array | null,
): Buffer {
  const length = payload === null ? 0 : payload.length;
  const out = Buffer.allocUnsafe(frameHeaderBytes + length);
  writeFrameHeader(out, 0, length, type, flags, streamId);
  if (payload !== null) out.set(payload, frameHeaderBytes);
  return out;
}

export function writeFrameHeader(
  out: Buffer,
  at: number,
  length: number,
  type: number,
  flags: number,
  streamId: number,
): void {
  out[at] = length >>> 16;
  out[at + 1] = (length >>> 8) & 0xff;
  out[at + 2] = length & 0xff;
  out[at + 3] = type;
  out[at + 4] = flags;
  out.writeUInt32BE(streamId & 0x7fffffff, at + 5);
}

export function settingsFrame(settings: readonly (readonly [number, number])[]): Buffer {
  const payload = Buffer.allocUnsafe(6 * settings.length);
  settings.forEach(([id, value], i) => {
    payload.writeUInt16BE(id, 6 * i);
    payload.writeUInt32BE(value, 6 * i + 2);
  });
  return frame(FrameType.settings, 0, 0, payload);
}

export function windowUpdateFrame(streamId: number, increment: number): Buffer {
  const payload = Buffer.allocUnsafe(4);
  payload.writeUInt32BE(increment, 0);
  return frame(FrameType.windowUpdate, 0, streamId, payload);
}

export function rstStreamFrame(streamId: number, code: H2Error): Buffer {
  const payload = Buffer.allocUnsafe(4);
  payload.writeUInt32BE(code, 0);
  return frame(FrameType.rstStream, 0, streamId, payload);
}

export function goawayFrame(lastStreamId: number, code: H2Error, debug: string): Buffer {
  const text = Buffer.from(debug.slice(0, 200), 'utf8');
  const payload = Buffer.allocUnsafe(8 + text.length);
  payload.writeUInt32BE(lastStreamId & 0x7fffffff, 0);
  payload.writeUInt32BE(code, 4);
  payload.set(text, 8);
  return frame(FrameType.goaway, 0, 0, payload);
}
