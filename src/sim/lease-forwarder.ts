// A follower's keepalives (and time-to-live and list queries) travel to the leader over the
// simulated network, with its delays, losses and partitions, and the answer travels back the
// same way: a request or answer that is lost, or lands on a member that is down, paused or no
// longer the same process, is simply never answered, and the caller's timeout (simulated) ends it.
import { cellWork } from '../mvcc/index.js';
import { UnavailableError } from '../base/errors.js';
import type { KeepaliveAnswer, LeaseInfo, LeaseList } from '../lease/api.js';
import type { MemberId } from '../raft/index.js';
import type { LeaseForwarder } from '../lease/api.js';
import type { LeaseService } from '../lease/lease-service.js';
import type { SimNode } from './sim-node.js';
import type { World } from './world.js';

export class SimLeaseForwarder implements LeaseForwarder {
  constructor(
    private readonly world: World,
    private readonly from: SimNode,
  ) {}

  keepalive(leader: MemberId, ids: readonly number[], timeoutMs: number): Promise<KeepaliveAnswer> {
    return this.call(leader, timeoutMs, (service) => service.keepalive(ids, true, cellWork));
  }

  timeToLive(leader: MemberId, id: number, timeoutMs: number): Promise<LeaseInfo> {
    return this.call(leader, timeoutMs, (service) => service.timeToLive(id, true, cellWork, true));
  }

  list(leader: MemberId, request: { after: number; limit: number }, timeoutMs: number): Promise<LeaseList> {
    return this.call(leader, timeoutMs, (service) => service.list(request, true, cellWork));
  }

  private call<T>(leader: MemberId, timeoutMs: number, run: (service: LeaseService) => Promise<T>): Promise<T> {
    const world = this.world;
    const from = this.from;
    const fromIncarnation = from.incarnation;
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      world.at(world.nowMs + timeoutMs, '', () => {
        if (settled) return;
        settled = true;
        reject(new UnavailableError(`the leader ${leader} did not answer in time`));
      });
      const reply = (target: SimNode, incarnation: number, answer: () => void): void => {
        // A member that crashed while answering sends nothing.
        if (target.incarnation !== incarnation || target.state === 'crashed' || target.state === 'removed') return;
        const back = world.network.route(world.nowMs, leader, from.id)[0];
        if (back === undefined) return;
        world.at(back, '', () => {
          if (settled || from.incarnation !== fromIncarnation || from.state !== 'running') return;
          settled = true;
          answer();
        });
      };
      const there = world.network.route(world.nowMs, from.id, leader)[0];
      if (there === undefined) return;
      world.at(there, '', () => {
        const target = world.nodes.get(leader);
        const service = target?.state === 'running' ? target.serverDriver?.leases : null;
        if (target === undefined || service === null || service === undefined) return;
        const incarnation = target.incarnation;
        run(service).then(
          (answer) => reply(target, incarnation, () => resolve(answer)),
          (error: unknown) => reply(target, incarnation, () => reject(error)),
        );
      });
    });
  }
}
