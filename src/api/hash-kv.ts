// HashKV paced for a serving node: hashKeySpaceSteps a page per event-loop turn, so a big key
// space does not stall heartbeats and other requests (used by the etcd facade, the native route
// and the corruption check).
import { hashKeySpaceSteps, type HashableStore, type KvHash } from '../mvcc/index.js';

export async function hashKvPaced(store: HashableStore, revision: number): Promise<KvHash> {
  const steps = hashKeySpaceSteps(store, revision);
  for (let step = steps.next(); ; step = steps.next()) {
    if (step.done === true) return step.value;
    await new Promise((resolve) => setImmediate(resolve));
  }
}
