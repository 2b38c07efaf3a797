// Peer protocol versions (wire format at the top of codec.ts). A member speaks every version from
// protocolVersionMin to protocolVersion; a connection speaks the version its dialer's handshake
// named, which the listener accepts only within its own range (so it is min(dialer, listener)).
// Version 5: version 4's bytes; a member speaking it applies store format 4 (leaseRevokeBatch,
// op 21), so a leader whose every peer accepted version 5 may move the store there.
// Version 4: ledgerQuery and ledgerReport (src/raft/peer-ledger.ts: a restarted member asks its
// peers what it promised them; never sent on a connection of an older version), and a member
// speaking it applies store format 3 (leaseGrantBatch, op 19), so a leader whose every peer
// accepted version 4 may move the store there (upgradeStore, src/node/store-upgrade.ts).
// Version 3: heartbeats carry the leader's contact list (member health, src/raft/contact.ts).
// Version 2: the snapshot header carries the data's checksum and the receiver answers it with a
// snapshotResume frame (the offset it already holds), so a dropped transfer resumes.
export const protocolVersion = 5;
/** The oldest version this member still speaks: a cell upgrades one member at a time from it. */
export const protocolVersionMin = 2;
/** The first version whose heartbeats carry a contact list. */
export const contactListVersion = 3;
/** The first version that carries the peer ledger's messages. */
export const ledgerVersion = 4;

/** Can `message` travel on a connection of `version`? (Older peers know no ledger messages.) */
export function carriesMessage(type: string, version: number): boolean {
  return version >= ledgerVersion || (type !== 'ledgerQuery' && type !== 'ledgerReport');
}
/** The first version whose members apply store format 3 (leaseGrantBatch): see store-upgrade.ts. */
export const storeFormat3Version = 4;
/** The first version whose members apply store format 4 (leaseRevokeBatch): see store-upgrade.ts. */
export const storeFormat4Version = 5;

export function speaksVersion(version: number): boolean {
  return version >= protocolVersionMin && version <= protocolVersion;
}
