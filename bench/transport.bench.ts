// Peer transport throughput over loopback between two processes (member 1 here, member 2 in a
// forked child), as Raft uses it: many small messages per event-loop turn, batched into frames.
// Each workload runs 5 times for a fixed time; the receiver times its own window (first to last
// delivery); medians are printed as a table and as JSON.
// Also measures the codec alone (encode + decode in one process) and heartbeat round trips. Bounded: about 25 s in all.
// Loopback can beat codec-only: there, encoding and decoding run on two cores in parallel.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RaftMessage } from '../src/raft/index.js';
import {
  FrameReader, PeerTransport, defaultTransportLimits, encodeMessageFrames, messageBytes,
  readMessagesBody,
} from '../src/transport/index.js';

const runMs = 1000;
const runs = 5;
const batchSize = 1000;
const roundTripCount = 2000;
const clusterId = 'bench';

type Workload = 'heartbeat' | 'append256' | 'appendResponse';
const workloads: readonly Workload[] = ['heartbeat', 'append256', 'appendResponse'];

function makeMessage(workload: Workload, from: number, to: number, i: number): RaftMessage {
  switch (workload) {
    case 'heartbeat':
      return { type: 'heartbeat', from, to, term: 7, commit: i, readRound: 0, contact: [from, to].sort((a, b) => a - b) };
    case 'append256':
      return { type: 'append', from, to, term: 7, prevIndex: i, prevTerm: 7, commit: i,
        entries: [{ index: i + 1, term: 7, type: 0, data: payload256 }] };
    case 'appendResponse':
      return { type: 'appendResponse', from, to, term: 7, index: i, reject: false, rejectHint: 0,
        hintTerm: 0 };
  }
}
const payload256 = new Uint8Array(256).fill(0x61);

type ChildRequest = { type: 'peer'; port: number } | { type: 'reset' } | { type: 'count' };
type ChildReply =
  | { type: 'listening'; port: number }
  | { type: 'count'; messages: number; seconds: number };

// ---- the receiving process ----
async function receiver(): Promise<void> {
  // The receiver times its own window, first to last delivery, so pipe latency doesn't count.
  let messages = 0;
  let firstAt = 0;
  let lastAt = 0;
  const transport = await PeerTransport.start({
    memberId: 2, clusterId, listen: { host: '127.0.0.1', port: 0 }, peers: new Map(),
    onMessages: (batch) => {
      const now = performance.now();
      if (messages === 0) firstAt = now;
      lastAt = now;
      messages += batch.length;
      // Round-trip probes (readRound > 0) are answered at once, as a follower would.
      for (const m of batch) {
        if (m.type === 'heartbeat' && m.readRound > 0) {
          transport.send([{ type: 'heartbeatResponse', from: 2, to: 1, term: m.term,
            readRound: m.readRound }]);
        }
      }
    },
  });
  const reply = (message: ChildReply): void => void process.send?.(message);
  process.on('message', (request: ChildRequest) => {
    if (request.type === 'peer') transport.addPeer(1, { host: '127.0.0.1', port: request.port });
    if (request.type === 'reset') messages = 0;
    if (request.type === 'count') {
      reply({ type: 'count', messages, seconds: (lastAt - firstAt) / 1000 });
    }
  });
  process.on('disconnect', () => void transport.close().then(() => process.exit(0)));
  reply({ type: 'listening', port: transport.address().port });
}

// ---- the sending process ----
function ask(child: ChildProcess, request: ChildRequest): Promise<ChildReply> {
  return new Promise((resolve) => {
    child.once('message', (reply: ChildReply) => resolve(reply));
    child.send(request);
  });
}

async function sendFor(transport: PeerTransport, workload: Workload, ms = runMs): Promise<number> {
  const queueMax = defaultTransportLimits.queueMessagesMax;
  const deadline = performance.now() + ms;
  let i = 0;
  while (performance.now() < deadline) {
    // Closed loop: refill only while the queue has room, so nothing is dropped.
    let queued = transport.stats().peers.get(2)?.queuedMessages ?? 0;
    for (; queued + batchSize <= queueMax / 2; queued += batchSize) {
      const batch: RaftMessage[] = new Array<RaftMessage>(batchSize);
      for (let k = 0; k < batchSize; k++) batch[k] = makeMessage(workload, 1, 2, i++);
      transport.send(batch);
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  return transport.stats().peers.get(2)?.droppedMessages ?? 0;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

function codecMessagesPerSecond(workload: Workload): number {
  const messages = Array.from({ length: batchSize }, (_, i) => makeMessage(workload, 1, 2, i));
  let decoded = 0;
  const start = performance.now();
  while (performance.now() - start < 500) {
    const wire = encodeMessageFrames(messages, messages.map(messageBytes), defaultTransportLimits);
    const reader = new FrameReader(defaultTransportLimits.frameBytesMax);
    reader.push(wire);
    for (let frame = reader.next(); frame !== null; frame = reader.next()) {
      decoded += readMessagesBody(frame.body, defaultTransportLimits).length;
    }
  }
  return decoded / ((performance.now() - start) / 1000);
}

/** Sequential heartbeat -> response round trips, in ms (includes both flush ticks). */
async function roundTrips(transport: PeerTransport, answered: Map<number, () => void>) {
  const samples: number[] = [];
  for (let round = 1; round <= roundTripCount; round++) {
    const start = performance.now();
    await new Promise<void>((resolve) => {
      answered.set(round, resolve);
      transport.send([{ type: 'heartbeat', from: 1, to: 2, term: 7, commit: 0, readRound: round, contact: [1, 2] }]);
    });
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  const at = (q: number): number => Number((samples[Math.floor(q * (samples.length - 1))] ?? 0)
    .toFixed(3));
  return { p50Ms: at(0.5), p99Ms: at(0.99), maxMs: at(1) };
}

async function sender(): Promise<void> {
  const answered = new Map<number, () => void>();
  const child = fork(fileURLToPath(import.meta.url), ['receiver'], { stdio: 'inherit' });
  const listening = await new Promise<ChildReply>((resolve) => child.once('message', resolve));
  if (listening.type !== 'listening') throw new Error('child did not start');
  const transport = await PeerTransport.start({
    memberId: 1, clusterId, listen: { host: '127.0.0.1', port: 0 },
    peers: new Map([[2, { host: '127.0.0.1', port: listening.port }]]),
    onMessages: (batch) => {
      for (const m of batch) if (m.type === 'heartbeatResponse') answered.get(m.readRound)?.();
    },
  });
  child.send({ type: 'peer', port: transport.address().port } satisfies ChildRequest);
  await ask(child, { type: 'count' }); // IPC is ordered: the child now knows member 1
  const results: Record<string, { msgsPerSecond: number; runs: number[]; dropped: number }> = {};
  let roundTrip = { p50Ms: 0, p99Ms: 0, maxMs: 0 };
  try {
    // Warm-up (not recorded): JIT, and TCP buffers growing to their steady-state size.
    for (const workload of workloads) await sendFor(transport, workload, runMs / 4);
    for (const workload of workloads) {
      const rates: number[] = [];
      let dropped = 0;
      for (let run = 0; run < runs; run++) {
        child.send({ type: 'reset' } satisfies ChildRequest);
        const droppedBefore = transport.stats().peers.get(2)?.droppedMessages ?? 0;
        dropped += (await sendFor(transport, workload)) - droppedBefore;
        await new Promise((resolve) => setTimeout(resolve, 300)); // let the pipe drain
        const reply = await ask(child, { type: 'count' });
        if (reply.type === 'count') rates.push(reply.messages / reply.seconds);
      }
      results[workload] = { msgsPerSecond: Math.round(median(rates)), dropped,
        runs: rates.map(Math.round) };
    }
    roundTrip = await roundTrips(transport, answered);
  } finally {
    await transport.close();
    child.disconnect();
    await new Promise((resolve) => child.once('exit', resolve));
  }
  const codec = Object.fromEntries(workloads.map((w) => [w, Math.round(codecMessagesPerSecond(w))]));
  console.log('workload         loopback msgs/s (median of 5)   codec-only msgs/s');
  for (const workload of workloads) {
    const r = results[workload];
    console.log(`${workload.padEnd(16)} ${String(r?.msgsPerSecond).padStart(12)}` +
      `   runs ${r?.runs.join('/')} dropped ${r?.dropped}`.padEnd(34) +
      `${String(codec[workload]).padStart(10)}`);
  }
  console.log(`heartbeat round trip (${roundTripCount} sequential): p50 ${roundTrip.p50Ms} ms, ` +
    `p99 ${roundTrip.p99Ms} ms, max ${roundTrip.maxMs} ms`);
  console.log(JSON.stringify({ bench: 'transport', runMs, batchSize, loopback: results, codec,
    roundTrip }));
}

if (process.argv[2] === 'receiver') await receiver();
else await sender();
