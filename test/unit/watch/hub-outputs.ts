// Reading what a watch hub gave one connection, for the hub unit tests: every output it holds, and
// the revisions one of its watches was sent.
import type { WatchConnection, WatchOutput } from '../../../src/watch/index.js';

/** Takes every output the connection holds now, in order. */
export function drain(connection: WatchConnection<string>): WatchOutput<string>[] {
  const outputs: WatchOutput<string>[] = [];
  for (let output = connection.next(); output !== null; output = connection.next()) outputs.push(output);
  return outputs;
}

/** The revisions of the events sent to the watch `tag`, in the order sent. */
export const revisionsOf = (outputs: WatchOutput<string>[], tag: string): number[] =>
  outputs.flatMap((o) => (o.type === 'batch' && o.tag === tag ? o.batch.events.map((e) => e.revision) : []));
