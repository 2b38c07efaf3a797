// What the move fault tests (move-kill, move-partition) share: a writer that follows wrong_cell
// from cell to cell, and the outcome a user cares about once a move ended: exactly one cell takes
// writes to the namespace, every acknowledged write is on it, and no two cells took writes at once.
import assert from 'node:assert/strict';
import { http, sleep, type TestCell } from './harness.js';

export interface Ack { key: string; value: string; cell: string; revision: number; atMs: number }

export interface MoveWriter {
  readonly acks: Ack[];
  stop(): Promise<void>;
}

/** One writer: new keys under `prefix`, to the cell it believes owns them, following wrong_cell. */
export function startMoveWriter(cells: Record<string, TestCell>, prefix: string, firstCell: string): MoveWriter {
  const acks: Ack[] = [];
  let running = true;
  let cell = firstCell;
  const path = prefix.slice(0, -1);
  const done = (async () => {
    for (let i = 0; running && i < 100_000; i++) {
      const key = `${path}/w${Date.now()}-${i}`;
      for (let attempt = 0; running && attempt < 2_000; attempt++) {
        const urls = (cells[cell] as TestCell).cell.clientUrls();
        const url = urls[attempt % urls.length] as string;
        let answer;
        try {
          answer = await http(`${url}/v1/kv${key}`, { method: 'PUT', body: `v${i}`, timeoutMs: 3_000 });
        } catch {
          await sleep(20);
          continue; // a killed member, or a timeout: the next member
        }
        if (answer.status === 200 || answer.status === 201) {
          acks.push({ key, value: `v${i}`, cell, revision: answer.body.revision, atMs: Date.now() });
          break;
        }
        if (answer.status === 421 && typeof answer.body.error?.cell === 'string' && answer.body.error.cell in cells) {
          cell = answer.body.error.cell;
        }
        await sleep(10);
      }
    }
  })();
  return { acks, stop: async () => { running = false; await done; } };
}

export interface EndedMove { phase: string; fenceRevision?: number; error?: string }

/**
 * After a move of `prefix` from `from` to `to` ended (released or aborted): the owner takes writes,
 * the other cell refuses them naming the owner, every ack is on the owner with its value, and
 * no ack is on the wrong side of the fence (released) or on the destination at all (aborted).
 */
export async function checkOneOwner(cells: Record<string, TestCell>, prefix: string, move: EndedMove, from: string, to: string, acks: readonly Ack[]): Promise<void> {
  assert.ok(move.phase === 'released' || move.phase === 'aborted', `the move ended: ${JSON.stringify(move)}`);
  const owner = move.phase === 'released' ? to : from;
  const other = owner === to ? from : to;
  const path = prefix.slice(0, -1);

  let ownerWrite;
  for (let attempt = 0; attempt < 100; attempt++) {
    const urls = (cells[owner] as TestCell).cell.clientUrls();
    ownerWrite = await http(`${urls[attempt % urls.length]}/v1/kv${path}/probe`, { method: 'PUT', body: 'p', timeoutMs: 3_000 }).catch(() => null);
    if (ownerWrite !== null && ownerWrite.status < 300) break;
    await sleep(100);
  }
  assert.ok(ownerWrite !== null && ownerWrite !== undefined && ownerWrite.status < 300, `the owner ${owner} takes writes: ${JSON.stringify(ownerWrite?.body)}`);
  for (const url of (cells[other] as TestCell).cell.clientUrls()) {
    const refused = await http(`${url}/v1/kv${path}/probe2`, { method: 'PUT', body: 'p', timeoutMs: 5_000 }).catch(() => null);
    if (refused === null) continue;
    assert.equal(refused.status, 421, `${other} refuses ${prefix} writes: ${JSON.stringify(refused.body)}`);
    assert.equal(refused.body.error.cell, owner);
  }

  const stored = new Map<string, string>();
  let read;
  for (let attempt = 0; attempt < 60 && read === undefined; attempt++) {
    const urls = (cells[owner] as TestCell).cell.clientUrls();
    read = await http(`${urls[attempt % urls.length]}/v1/kv${prefix}?prefix=true&consistency=linearizable`).then((r) => (r.status === 200 ? r : undefined), () => undefined);
    if (read === undefined) await sleep(200);
  }
  assert.ok(read !== undefined, `the owner ${owner} answers a read`);
  for (const kv of read.body.kvs as { key: string; value: string }[]) stored.set(kv.key, kv.value);
  const lost = acks.filter((a) => stored.get(a.key) !== a.value);
  assert.deepEqual(lost.slice(0, 5), [], `${lost.length} of ${acks.length} acknowledged writes lost`);

  if (move.phase === 'released') {
    const fence = move.fenceRevision as number;
    const misplaced = acks.filter((a) => (a.cell === from ? a.revision > fence : a.revision <= fence));
    assert.deepEqual(misplaced.slice(0, 5), [], `acks on the wrong side of the fence ${fence}`);
  } else {
    assert.deepEqual(acks.filter((a) => a.cell === to).slice(0, 5), [], 'an aborted move: the destination acknowledged nothing');
    assert.match(move.error ?? '', /./, 'an aborted move says why');
  }
  assert.ok(acks.length > 0);
}
