export type {
  ConfChange,
  ConfChangeItem,
  ConfState,
  Entry,
  HardState,
  MemberId,
  PeerRecord,
  ProposeRefusal,
  ForwardRefusal,
  ProposeResult,
  RaftApi,
  RaftBugs,
  RaftConfig,
  RaftMessage,
  RaftMessageType,
  RaftStatus,
  ReadState,
  Ready,
  RecoveredState,
  Snapshot,
  SnapshotMeta,
  SoftState,
} from './types.js';
export { EntryType, Role, defaultRaftConfig, noMember } from './types.js';
export { encodeConfEntry, decodeConfEntry, applyConfChange, type ConfEntry } from './conf-change.js';

import type { Random } from '../base/random.js';
import { RaftNode } from './raft-node.js';
import type { RaftApi, RaftConfig, RecoveredState } from './types.js';

/** A Raft core for member `config.id`, resuming from what its disk recovered. */
export function createRaftNode(config: RaftConfig, recovered: RecoveredState, random: Random): RaftApi {
  return new RaftNode(config, recovered, random);
}
