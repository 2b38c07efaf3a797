// Peer protocol versions (wire format at the top of codec.ts). A member speaks every version from
// protocolVersionMin to protocolVersion; a connection speaks the version its dialer's handshake
// named, which the listener accepts only within its own range (so it is min(dialer, listener)).
// Version 6: version 5's bytes; a member speaking it applies store format 5 (lease ids from the
// cell's base), and accepts a control channel (handshake channel
// 3) beside the raft channel: heartbeats, answers, votes, reads and lease frames travel there, so
// they never queue behind megabytes of appends or forwarded proposals (etcd's rafthttp keeps its
// appends on a stream of their own for the same reason). Dialled only to a peer whose listener
// accepted version 6 on the raft channel: older members never see channel 3.
// Version 5: version 4's bytes; a member speaking it applies store format 4 (leaseRevokeBatch,
// op 21), so a leader whose every peer accepted version 5 may move the store there.
// Version 4: ledgerQuery and ledgerReport (src/raft/peer-ledger.ts: a restarted member asks its
// peers what it promised them; never sent on a connection of an older version), and a member
// speaking it applies store format 3 (leaseGrantBatch, op 19), so a leader whose every peer
// accepted version 4 may move the store there (upgradeStore, src/node/store-upgrade.ts).
// Version 3: heartbeats carry the leader's contact list (member health, src/raft/contact.ts).
// Version 2: the snapshot header carries the data's checksum and the receiver answers it with a
// snapshotResume frame (the offset it already holds), so a dropped transfer resumes.
export const protocolVersion = 6;
/** The oldest version this member still speaks: a cell upgrades one member at a time from it. */
export const protocolVersionMin = 2;
/** The first version whose heartbeats carry a contact list. */
export const contactListVersion = 3;
/** The first version that carries the peer ledger's messages. */
export const ledgerVersion = 4;

/** The first version whose listener accepts a control channel. */
export const controlChannelVersion = 6;

/**
 * Does a message of `type` travel on the raft channel even when a control channel is up? Only the
 * bulky ones: appends (entries) and forwarded proposals (commands). Everything else is small and
 * waited on (heartbeats and their answers carry read rounds and check-quorum; append answers carry
 * commits), so it takes the control channel. Raft tolerates the reordering between the two.
 */
export function travelsBulk(type: string): boolean {
  return type === 'append' || type === 'propose';
}

/** Can `message` travel on a connection of `version`? (Older peers know no ledger messages.) */
export function carriesMessage(type: string, version: number): boolean {
  return version >= ledgerVersion || (type !== 'ledgerQuery' && type !== 'ledgerReport');
}
/** The first version whose members apply store format 3 (leaseGrantBatch): see store-upgrade.ts. */
export const storeFormat3Version = 4;
/** The first version whose members apply store format 4 (leaseRevokeBatch): see store-upgrade.ts. */
export const storeFormat4Version = 5;
/** The first version whose members apply store format 5 (lease ids from the cell's base). */
export const storeFormat5Version = 6;

export function speaksVersion(version: number): boolean {
  return version >= protocolVersionMin && version <= protocolVersion;
}
