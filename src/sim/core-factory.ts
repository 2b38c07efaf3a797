// The real Raft core behind the factory type the world uses (tests may pass another).
import { createRaftNode } from '../raft/index.js';
import type { CoreFactory } from './types.js';

export const createCore: CoreFactory = (config, recovered, random) =>
  createRaftNode(config, recovered, random);
