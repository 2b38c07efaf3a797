// Watches against a reference model, under a seeded random schedule: three replicas apply one
// committed log at different paces, clients watch keys and prefixes from random past (or future)
// revisions, read at random paces (small buffers, so slow consumers are ended), disconnect and
// resume on another replica, compactions land, and serving replicas restart. Every client's
// received events must equal exactly the model's events after its start, in order, except ranges
// it was explicitly told were compacted (and only when they really were).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRandom, chance, pick, randomInt, type Random } from '../../../src/base/random.js';
import type { Entry } from '../../../src/raft/types.js';
import { seedsToRun } from '../../../src/sim/seeds.js';
import {
  WatchHub,
  type WatchConnection,
  type WatchFilter,
  type WatchLimits,
  type WatchOutput,
  type WatchSpec,
  type Watcher,
} from '../../../src/watch/index.js';
import { Replica, WatchModel, commandEntry, eventLine, keyPool, prefixPool, randomCommand } from './model.js';

interface Client {
  readonly id: number;
  readonly spec: Omit<WatchSpec, 'startRevision'>;
  /** Where its expectations start (resolved by the first watcher for "from now"). */
  start: number;
  /** Highest revision the client has been told everything up to. */
  last: number;
  received: string[];
  /** Revision ranges the client was told were compacted away (inclusive). */
  skipped: [number, number][];
  watcher: Watcher<Client> | null;
  replica: number;
  stats: { resumes: number; slow: number; compacted: number; progress: number };
}

interface Node {
  readonly replica: Replica;
  hub: WatchHub<Client>;
  connections: WatchConnection<Client>[];
}

function limitsFor(random: Random): WatchLimits {
  return {
    bufferedEventsMax: randomInt(random, 2, 12),
    bufferedBytesMax: randomInt(random, 600, 4000),
    watchersPerConnectionMax: 1000,
    watchersPerNodeMax: 1000,
    readEventsMax: randomInt(random, 1, 6),
    catchUpReadsPerStepMax: randomInt(random, 1, 3),
  };
}

function runSeed(seed: bigint): { checked: number; events: number; totals: Client['stats'] } {
  const random = new SeededRandom(seed);
  const limits = limitsFor(random);
  const model = new WatchModel();
  const log: Entry[] = [];
  const clients: Client[] = [];
  const newNode = (replica: Replica): Node => {
    const hub = new WatchHub<Client>(replica.store, limits);
    return { replica, hub, connections: [0, 1].map(() => hub.openConnection(() => {}, () => true)) };
  };
  const nodes: Node[] = [0, 1, 2].map(() => newNode(new Replica()));
  const fail = (client: Client, message: string): never => {
    throw new Error(`seed ${seed}, client ${client.id} (${JSON.stringify(client.spec)}): ${message}`);
  };

  const attach = (client: Client, nodeIndex: number, startRevision: number): void => {
    const node = nodes[nodeIndex] as Node;
    const connection = pick(random, node.connections);
    client.watcher = node.hub.create(connection, client, { ...client.spec, startRevision });
    client.replica = nodeIndex;
    if (startRevision === 0) {
      client.start = client.watcher.startRevision;
      client.last = client.start - 1;
    }
    assert.equal(client.watcher.startRevision, client.last + 1, 'a watcher starts where the client asked');
  };
  const resume = (client: Client): void => {
    client.stats.resumes++;
    attach(client, randomInt(random, 0, nodes.length - 1), client.last + 1);
  };

  const deliver = (node: Node, output: WatchOutput<Client>, resumeNow = true): void => {
    const client = output.tag;
    if (client.watcher === null || client.replica !== nodes.indexOf(node)) fail(client, 'output after detaching');
    if (output.type === 'batch') {
      const { batch } = output;
      if (batch.revision < client.last) fail(client, `batch ${batch.revision} after ${client.last}`);
      if (batch.revision > node.replica.store.revision) fail(client, 'a batch beyond the applied state');
      let previous = client.last;
      for (const event of batch.events) {
        if (event.revision <= previous && event.revision !== previous) fail(client, 'events out of order');
        if (event.revision <= client.last || event.revision > batch.revision) {
          fail(client, `event ${event.revision} outside (${client.last}, ${batch.revision}]`);
        }
        previous = event.revision;
        client.received.push(eventLine(event));
      }
      if (batch.events.length === 0) client.stats.progress++;
      client.last = batch.revision;
      return;
    }
    client.watcher = null;
    if (output.lastRevision !== client.last) fail(client, `end says ${output.lastRevision}, client saw ${client.last}`);
    if (output.reason === 'compacted') {
      const compactRevision = output.error?.details['compactRevision'] as number;
      if (!(client.last + 1 < compactRevision)) fail(client, `compacted at ${compactRevision} though it needed ${client.last + 1}`);
      client.stats.compacted++;
      client.skipped.push([client.last + 1, compactRevision - 1]);
      client.last = compactRevision - 1;
    } else if (output.reason === 'slow_consumer') {
      client.stats.slow++;
    } else if (output.reason !== 'stopped') {
      fail(client, `unexpected end ${output.reason}`);
    }
    if (resumeNow) resume(client);
  };

  const pull = (node: Node, connection: WatchConnection<Client>, budget: number): number => {
    let count = 0;
    for (; count < budget; count++) {
      const output = connection.next();
      if (output === null) break;
      deliver(node, output);
    }
    return count;
  };

  const newClient = (): void => {
    const prefix = chance(random, 0.4);
    const filter: WatchFilter = chance(random, 0.7) ? 'all' : pick(random, ['put', 'delete'] as const);
    const spec = {
      key: prefix ? pick(random, prefixPool) : pick(random, keyPool),
      prefix,
      prevKv: chance(random, 0.5),
      filter,
      encoding: pick(random, ['utf8', 'base64']),
    };
    const nodeIndex = randomInt(random, 0, nodes.length - 1);
    const store = (nodes[nodeIndex] as Node).replica.store;
    const fromNow = chance(random, 0.2);
    const start = fromNow ? 0 : randomInt(random, Math.max(1, store.compactRevision - 2), store.revision + 2);
    const client: Client = {
      id: clients.length, spec, start, last: start - 1, received: [], skipped: [], watcher: null, replica: nodeIndex,
      stats: { resumes: 0, slow: 0, compacted: 0, progress: 0 },
    };
    clients.push(client);
    attach(client, nodeIndex, start);
  };

  const restart = (nodeIndex: number): void => {
    const node = nodes[nodeIndex] as Node;
    node.hub.stop();
    // The stream ends cleanly: each client hears `stopped` and resumes (maybe here, once back).
    const ended: Client[] = [];
    for (const connection of node.connections) {
      for (let output = connection.next(); output !== null; output = connection.next()) {
        assert.equal(output.type, 'end', 'a stopped hub has nothing but ends to give');
        deliver(node, output, false);
        ended.push(output.tag);
      }
      connection.close();
    }
    node.replica.restart();
    nodes[nodeIndex] = newNode(node.replica);
    for (const client of ended) resume(client);
  };

  const steps = randomInt(random, 150, 300);
  for (let step = 0; step < steps; step++) {
    const roll = randomInt(random, 0, 99);
    if (roll < 30) {
      for (let i = randomInt(random, 1, 3); i > 0; i--) {
        const command = randomCommand(random, model, step);
        model.apply(command);
        log.push(commandEntry(log.length + 1, command));
      }
    } else if (roll < 55) {
      const node = pick(random, nodes);
      if (node.replica.applyFrom(log, randomInt(random, 1, 6)) > 0) node.hub.onApplied();
    } else if (roll < 80) {
      const node = pick(random, nodes);
      pull(node, pick(random, node.connections), chance(random, 0.2) ? 1 : randomInt(random, 1, 30));
    } else if (roll < 86 && clients.length < 40) {
      newClient();
    } else if (roll < 91) {
      const attached = clients.filter((c) => c.watcher !== null);
      if (attached.length > 0) {
        const client = pick(random, attached);
        const node = nodes[client.replica] as Node;
        const last = node.hub.cancel(client.watcher as Watcher<Client>);
        assert.ok(last <= client.last, 'cancel reports no more than was delivered');
        client.watcher = null;
        resume(client);
      }
    } else if (roll < 96) {
      const attached = clients.filter((c) => c.watcher !== null);
      if (attached.length > 0) {
        const client = pick(random, attached);
        (nodes[client.replica] as Node).hub.progress(client.watcher as Watcher<Client>);
      }
    } else if (roll < 98) {
      restart(randomInt(random, 0, nodes.length - 1));
    }
  }

  // Quiesce: every replica applies everything, every client reads until nothing is left.
  for (const node of nodes) {
    while (node.replica.applyFrom(log, 7) > 0) node.hub.onApplied();
    assert.equal(node.replica.store.revision, model.revision, 'replicas agree with the model');
  }
  for (let round = 0; round < 10_000; round++) {
    let moved = 0;
    for (const node of nodes) for (const connection of node.connections) moved += pull(node, connection, 50);
    if (moved === 0) break;
    assert.ok(round < 9_999, 'delivery quiesces');
  }

  const totals = { resumes: 0, slow: 0, compacted: 0, progress: 0 };
  let events = 0;
  for (const client of clients) {
    events += client.received.length;
    const skipped = (revision: number): boolean => client.skipped.some(([a, b]) => revision >= a && revision <= b);
    const expected = model.events
      .filter((e) => e.revision >= client.start && !skipped(e.revision))
      .filter((e) => (client.spec.prefix ? e.key.startsWith(client.spec.key) : e.key === client.spec.key))
      .filter((e) => client.spec.filter === 'all' || client.spec.filter === e.type)
      .map((e) => e.line);
    assert.deepEqual(client.received, expected, `seed ${seed}, client ${client.id} ${JSON.stringify(client.spec)} from ${client.start}`);
    for (const key of Object.keys(totals) as (keyof typeof totals)[]) totals[key] += client.stats[key];
  }
  return { checked: clients.length, events, totals };
}

test('every watcher sees exactly the model events after its start, across resumes, overflow, compaction and restarts', () => {
  const fallback = Array.from({ length: 60 }, (_, i) => BigInt(i + 1));
  const totals = { clients: 0, events: 0, resumes: 0, slow: 0, compacted: 0, progress: 0 };
  for (const seed of seedsToRun({ fallback, env: process.env })) {
    const run = runSeed(seed);
    totals.clients += run.checked;
    totals.events += run.events;
    for (const key of Object.keys(run.totals) as (keyof typeof run.totals)[]) totals[key] += run.totals[key];
  }
  // The schedule must actually exercise what it claims to (otherwise the test proves little).
  if (process.env.WATCH_SIM_VERBOSE) console.log(JSON.stringify(totals));
  assert.ok(totals.slow > 0 && totals.compacted > 0 && totals.resumes > 0 && totals.progress > 0, JSON.stringify(totals));
});
