// The build gate's decision (src/control/member-builds.ts) and the move record's `blocked` note
// (src/control/moves.ts): an older member (no moveProtocol, or below the one needed) refuses with
// precondition_failed naming each older member of either cell and nobody else; a member that does
// not answer holds nothing, a cell none of whose members answers refuses a start (unavailable); the
// note keeps the map's epoch,
// survives a parse, and the fence clears it. (Real members in test/cluster/move-build-gate.test.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PreconditionFailedError, UnavailableError } from '../../../src/base/errors.js';
import { moveProtocol, moveProtocolNeeded, nestedMoveProtocolNeeded } from '../../../src/base/namespace-import.js';
import { buildsProblem, protocolNeeded, type CellBuilds, type MemberBuild } from '../../../src/control/member-builds.js';
import { parseCellMap, withCell, withNamespace } from '../../../src/control/cell-map.js';
import { withMoveAdvanced, withMoveBlocked, withMoveStarted } from '../../../src/control/moves.js';

const member = (id: number, protocol: number | null): MemberBuild => ({
  id, name: `n${id}`, clientUrl: `http://127.0.0.1:${9000 + id}`, moveProtocol: protocol, storeFormat: protocol === null ? null : 4,
});
const cell = (id: string, ...members: MemberBuild[]): CellBuilds => ({ cell: id, members });
/** A member on a build the gate takes, and one on the landing build before it (protocol 1). */
const ok = moveProtocolNeeded;
const landingOnly = 1;

test('this build reports the move protocol the gate needs', () => {
  assert.ok(moveProtocol >= moveProtocolNeeded);
});

test('every member on a landing build: no problem, whether or not silence is allowed', () => {
  const cells = [cell('cell-1', member(1, ok), member(2, ok), member(3, ok)), cell('cell-2', member(4, ok), member(5, ok + 1))];
  assert.equal(buildsProblem(cells, 'refuse'), null);
  assert.equal(buildsProblem(cells, 'allow'), null);
});

test('an older member in either cell refuses the move, naming each older member and what is needed', () => {
  for (const silent of ['refuse', 'allow'] as const) {
    const problem = buildsProblem([cell('cell-1', member(1, ok), member(2, 0)), cell('cell-2', member(4, ok), member(5, landingOnly), member(6, null))], silent);
    assert.ok(problem instanceof PreconditionFailedError, String(problem));
    assert.match(problem.message, /cell cell-1 member n2 \(id 2, http:\/\/127\.0\.0\.1:9002\) runs a build with move protocol 0 \(none reported: older than landing imports\), store format 4/);
    assert.match(problem.message, /cell cell-2 member n5 \(id 5, http:\/\/127\.0\.0\.1:9005\) runs a build with move protocol 1, store format 4/);
    assert.match(problem.message, new RegExp(`every member of cell-1 and cell-2 on a build with move protocol ${moveProtocolNeeded} or newer`));
    assert.deepEqual((problem.details['members'] as { cell: string; id: number }[]).map((m) => `${m.cell}/${m.id}`), ['cell-1/2', 'cell-2/5']);
  }
});

test('a member that does not answer holds nothing; a cell none of whose members answers refuses a start (unavailable), not a fence', () => {
  const silentMember = [cell('cell-1', member(1, ok), member(2, null)), cell('cell-2', member(4, ok))];
  assert.equal(buildsProblem(silentMember, 'refuse'), null);
  assert.equal(buildsProblem(silentMember, 'allow'), null);
  const silentCell = [cell('cell-1', member(1, ok)), { cell: 'cell-2', members: null }];
  const refused = buildsProblem(silentCell, 'refuse');
  assert.ok(refused instanceof UnavailableError, String(refused));
  assert.match(refused.message, /no member of cell cell-2 answered its status/);
  assert.equal(buildsProblem(silentCell, 'allow'), null);
  // An older member that answers still refuses next to a silent one.
  assert.ok(buildsProblem([cell('cell-1', member(1, 0), member(2, null))], 'allow') instanceof PreconditionFailedError);
});

test('the blocked note: same epoch, parsed back, replaced only when it changes, cleared by the fence', () => {
  let map = withCell({ epoch: 0, cells: [], namespaces: [] }, { id: 'cell-1', endpoints: ['http://a:1'] });
  map = withCell(map, { id: 'cell-2', endpoints: ['http://b:1'] });
  map = withMoveStarted(withNamespace(map, '/pay/', 'cell-1'), '/pay/', 'cell-2', 1);
  const id = map.moves?.[0]?.id as number;
  map = withMoveAdvanced(map, id, 'copying', { copyRevision: 5 }, 2);
  const blocked = withMoveBlocked(map, id, 'catching-up', 'cell cell-2 member n3 runs a build with move protocol 0');
  assert.equal(blocked.epoch, map.epoch, 'no table changes: the epoch stays');
  assert.equal(withMoveBlocked(blocked, id, 'catching-up', 'cell cell-2 member n3 runs a build with move protocol 0'), blocked, 'the same reason changes nothing');
  assert.equal(withMoveBlocked(blocked, id, 'copying', 'other'), blocked, 'a record no longer in that phase is left alone');
  const parsed = parseCellMap(JSON.parse(JSON.stringify(blocked)));
  assert.equal(parsed.moves?.[0]?.blocked, 'cell cell-2 member n3 runs a build with move protocol 0');
  const fenced = withMoveAdvanced(blocked, id, 'catching-up', {}, 3);
  assert.equal(fenced.moves?.[0]?.phase, 'fenced');
  assert.equal('blocked' in (fenced.moves?.[0] ?? {}), false, 'the fence clears the note');
  assert.equal('blocked' in (withMoveBlocked(blocked, id, 'catching-up', null).moves?.[0] ?? {}), false);
});

test('a namespace with namespaces nested in it needs protocol 4 on every member (imports that leave them alone)', () => {
  assert.equal(protocolNeeded([]), moveProtocolNeeded);
  assert.equal(protocolNeeded(['/pay/eu/']), nestedMoveProtocolNeeded);
  assert.ok(moveProtocol >= nestedMoveProtocolNeeded, 'this build moves them');
  const protocol3 = [cell('cell-1', member(1, 3), member(2, nestedMoveProtocolNeeded)), cell('cell-2', member(4, nestedMoveProtocolNeeded))];
  assert.equal(buildsProblem(protocol3, 'refuse'), null, 'a plain move still goes on protocol 3');
  const problem = buildsProblem(protocol3, 'refuse', protocolNeeded(['/pay/eu/']));
  assert.ok(problem instanceof PreconditionFailedError, String(problem));
  assert.match(problem.message, /member n1 .* move protocol 3.*moving a namespace with namespaces nested in it needs every member of cell-1 and cell-2 on a build with move protocol 4/);
});
