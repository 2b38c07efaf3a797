// Fair admission's pure scheduling (src/base/fair-queue.ts, src/base/fair-admission.ts) on an
// injected clock: seats bound what is served at once; a flooding flow cannot push a quiet flow's
// request behind more than its hand of queues (FIFO would put it behind the whole flood); a wide
// request is not starved by narrow ones; queues are bounded and a full hand is refused at once;
// a request past its deadline is dropped, never served; lists have seats of their own and cost
// by the keys they may return.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FairQueue, type FairRequest } from '../../../src/base/fair-queue.js';
import { FairAdmission, defaultFairAdmissionOptions } from '../../../src/base/fair-admission.js';
import { OverloadedError } from '../../../src/base/errors.js';

interface Tracked {
  readonly flow: string;
  readonly id: number;
  release?: () => void;
  droppedAfterMs?: number;
}

function harness(options = { seats: 1, queues: 16, handSize: 4, queueLengthMax: 100 }) {
  const clock = { ms: 0 };
  const queue = new FairQueue(options, () => clock.ms);
  const served: Tracked[] = [];
  const offer = (flow: string, id: number, cost = 1, deadlineMs = 1e9): { tracked: Tracked; accepted: boolean } => {
    const tracked: Tracked = { flow, id };
    const request: FairRequest = {
      flow, cost, deadlineMs,
      admitted: (release) => {
        tracked.release = release;
        served.push(tracked);
      },
      dropped: (waitedMs) => {
        tracked.droppedAfterMs = waitedMs;
      },
    };
    return { tracked, accepted: queue.offer(request) };
  };
  /** Finishes the oldest request being served (which dispatches the next). */
  const finishOne = (): void => {
    const running = served.find((t) => t.release !== undefined && !(t as { done?: boolean }).done);
    assert.ok(running, 'something is being served');
    (running as { done?: boolean }).done = true;
    running.release?.();
  };
  return { clock, queue, served, offer, finishOne };
}

test('seats bound what is served at once; releases serve the waiting', () => {
  const { queue, served, offer, finishOne } = harness({ seats: 3, queues: 8, handSize: 2, queueLengthMax: 10 });
  for (let i = 0; i < 5; i++) offer('a', i);
  assert.equal(served.length, 3);
  assert.equal(queue.inUse, 3);
  assert.equal(queue.waiting, 2);
  finishOne();
  finishOne();
  assert.equal(served.length, 5);
  assert.equal(queue.waiting, 0);
  for (let i = 0; i < 3; i++) finishOne();
  assert.equal(queue.inUse, 0);
});

test('a flooding flow cannot push a quiet flow behind more than its hand of queues', () => {
  const { queue, served, offer, finishOne } = harness();
  for (let i = 0; i < 60; i++) offer('flood', i);
  // Serve a few of the flood, so the virtual time has moved on, then the quiet flow asks.
  for (let i = 0; i < 10; i++) finishOne();
  const servedBefore = served.length;
  const { tracked } = offer('quiet', 0);
  let floodAhead = 0;
  while (!served.includes(tracked)) {
    finishOne();
    floodAhead++;
  }
  // The quiet request waits for at most one round of the flood's hand (4 queues) and the one
  // being served: not behind the ~50 still queued, as it would in one FIFO.
  assert.ok(floodAhead <= queue.options.handSize + 1, `quiet waited behind ${floodAhead} flood requests`);
  assert.ok(served.length - servedBefore <= queue.options.handSize + 1);
  assert.ok(queue.waiting > 40, 'the flood is still queued');
});

test('busy flows share the seats equally by cost, whatever each sends', () => {
  const { served, offer, finishOne } = harness({ seats: 1, queues: 64, handSize: 1, queueLengthMax: 1000 });
  for (let i = 0; i < 300; i++) offer('heavy', i);
  for (let i = 0; i < 100; i++) offer('light', i);
  for (let i = 0; i < 100; i++) finishOne();
  const window = served.slice(1, 101);
  const light = window.filter((t) => t.flow === 'light').length;
  // One queue each: alternate turns, so about half of the first 100 served are light's.
  assert.ok(light >= 45 && light <= 55, `light got ${light} of 100`);
});

test('a wide request waits for its seats and narrow requests behind it do not pass it', () => {
  const { served, offer, finishOne } = harness({ seats: 4, queues: 8, handSize: 1, queueLengthMax: 100 });
  offer('a', 1);
  const wide = offer('b', 2, 4).tracked;
  const narrow = offer('c', 3).tracked;
  assert.ok(!served.includes(wide) && !served.includes(narrow), 'both wait: the wide head holds the line');
  finishOne();
  assert.ok(served.includes(wide));
  assert.ok(!served.includes(narrow));
  finishOne();
  assert.ok(served.includes(narrow));
});

test('queues are bounded: a flow whose hand is full is refused at once, another flow still queues', () => {
  const { queue, offer } = harness({ seats: 1, queues: 16, handSize: 2, queueLengthMax: 3 });
  let accepted = 0;
  for (let i = 0; i < 20; i++) if (offer('flood', i).accepted) accepted++;
  // One served, then two queues of three.
  assert.equal(accepted, 1 + 2 * 3);
  assert.equal(queue.full('flood'), true);
  assert.equal(offer('other', 0).accepted, true);
});

test('a request past its deadline is dropped, never served, and its seat goes to the next', () => {
  const { clock, queue, served, offer, finishOne } = harness({ seats: 1, queues: 8, handSize: 2, queueLengthMax: 10 });
  offer('a', 0);
  const late = offer('a', 1, 1, 100).tracked;
  const onTime = offer('b', 2, 1, 10_000).tracked;
  clock.ms = 150;
  queue.expire();
  assert.equal(late.droppedAfterMs, 150);
  assert.equal(queue.waiting, 1);
  finishOne();
  assert.ok(served.includes(onTime));
  assert.ok(!served.includes(late));
});

test('a head past its deadline is dropped at dispatch even without a sweep', () => {
  const { clock, served, offer, finishOne } = harness({ seats: 1, queues: 8, handSize: 1, queueLengthMax: 10 });
  offer('a', 0);
  const late = offer('a', 1, 1, 100).tracked;
  clock.ms = 200;
  finishOne();
  assert.equal(late.droppedAfterMs, 200);
  assert.ok(!served.includes(late));
});

test('a flow is always dealt the same hand of distinct queues', () => {
  const { queue } = harness({ seats: 1, queues: 64, handSize: 6, queueLengthMax: 10 });
  const hand = queue.handOf('tenant-a');
  assert.equal(new Set(hand).size, 6);
  assert.deepEqual(queue.handOf('tenant-a'), hand);
  assert.notDeepEqual(queue.handOf('tenant-b'), hand);
});

function fakeTimers() {
  const clock = { ms: 0 };
  const pending: Array<{ at: number; run: () => void; cancelled: boolean }> = [];
  return {
    clock,
    timers: {
      monotonicMs: () => clock.ms,
      setTimeout: (run: () => void, ms: number) => {
        const timer = { at: clock.ms + ms, run, cancelled: false };
        pending.push(timer);
        return { cancel: () => { timer.cancelled = true; } };
      },
    },
    advance(ms: number): void {
      clock.ms += ms;
      for (;;) {
        const due = pending.find((t) => !t.cancelled && t.at <= clock.ms);
        if (due === undefined) return;
        pending.splice(pending.indexOf(due), 1);
        due.run();
      }
    },
  };
}

test('lists cost by the keys they may return and have seats of their own: small requests pass a list flood', async () => {
  const { timers } = fakeTimers();
  const options = { ...defaultFairAdmissionOptions, small: { seats: 2, queues: 8, handSize: 2, queueLengthMax: 4 }, lists: { seats: 4, queues: 8, handSize: 2, queueLengthMax: 4 } };
  const fair = new FairAdmission(options, timers);
  assert.equal(fair.costOf({ flow: 'a', kind: 'list', mayReturn: 50 }), 1);
  assert.equal(fair.costOf({ flow: 'a', kind: 'list', mayReturn: 250 }), 3);
  assert.equal(fair.costOf({ flow: 'a', kind: 'list' }), 4, 'unknown: the widest');
  assert.equal(fair.costOf({ flow: 'a', kind: 'read' }), 1);
  assert.equal(fair.costOf({ flow: 'a', kind: 'write', ops: 40 }), 3);
  const first = fair.admit({ flow: 'a', kind: 'list' });
  assert.equal(typeof first, 'function', 'free seats admit at once, no promise');
  const waiting = fair.admit({ flow: 'a', kind: 'list' });
  assert.ok(waiting instanceof Promise);
  // The lists level is full; a small read is still admitted at once.
  const read = fair.admit({ flow: 'b', kind: 'read' });
  assert.equal(typeof read, 'function');
  (first as () => void)();
  const seat = await waiting;
  seat();
});

test('a full hand is refused with 429 overloaded and its details; a queued request past its wait is dropped by the sweep', async () => {
  const fake = fakeTimers();
  const options = { ...defaultFairAdmissionOptions, queueWaitMs: 1000, small: { seats: 1, queues: 4, handSize: 1, queueLengthMax: 2 } };
  const fair = new FairAdmission(options, fake.timers);
  const held = fair.admit({ flow: 'a', kind: 'write' }) as () => void;
  const queued = [fair.admit({ flow: 'a', kind: 'write' }), fair.admit({ flow: 'a', kind: 'write' })] as Array<Promise<() => void>>;
  const outcomes = queued.map((p) => p.then(() => 'served', (error: unknown) => error));
  assert.ok(fair.refuseEarly({ flow: 'a', kind: 'write' }) instanceof OverloadedError);
  await assert.rejects(fair.admit({ flow: 'a', kind: 'write' }) as Promise<unknown>, (error: unknown) => {
    assert.ok(error instanceof OverloadedError);
    assert.deepEqual(error.details, { tenant: 'a', reason: 'queue_full', kind: 'write' });
    return true;
  });
  fake.advance(1100);
  for (const outcome of await Promise.all(outcomes)) {
    assert.ok(outcome instanceof OverloadedError, String(outcome));
    assert.equal(outcome.details['reason'], 'queue_deadline');
  }
  held();
  assert.deepEqual(fair.dropped().sort((x, y) => x.reason.localeCompare(y.reason)), [
    { flow: 'a', reason: 'queue_deadline', count: 2 },
    { flow: 'a', reason: 'queue_full', count: 2 }, // the early refusal and the admit's
  ]);
  assert.equal(fair.small.inUse, 0);
});
