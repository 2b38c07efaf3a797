// Test "hosts" on one machine: Linux network namespaces that the test creates, each with one
// address on a private bridge that the test also creates (and removes), so a cell runs across
// three network stacks and a host's link can be cut like a cable (`ip link set ... down`). Traffic
// only ever goes to these namespaces' addresses. Needs root and iproute2; `netnsUnavailable` says
// why not otherwise, and tests skip with that reason.
import { execFileSync } from 'node:child_process';

export interface TestHost {
  readonly name: string;
  /** The namespace's name (`ip netns exec NS ...`). */
  readonly namespace: string;
  readonly address: string;
  /** The veth end in the root namespace, on the bridge: down = this host is cut off. */
  readonly link: string;
}

export interface TestNetwork {
  readonly hosts: readonly TestHost[];
  /** The root namespace's address on the bridge (where the test's own client sits). */
  readonly gateway: string;
  cut(host: TestHost): void;
  heal(host: TestHost): void;
  remove(): void;
}

function ip(args: readonly string[]): string {
  return execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
}

/** Why namespaces cannot be made here, or null when they can. */
export function netnsUnavailable(): string | null {
  if (process.platform !== 'linux') return 'network namespaces are Linux only';
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  try {
    ip(['netns', 'list']);
  } catch {
    return 'iproute2 (ip) is not installed';
  }
  return null;
}

/**
 * Makes `count` hosts `h1`.. on a /24 of 10.254.0.0/16 that no interface or route of this machine
 * uses (chosen from the process id, checked), bridged to the root namespace.
 */
export function createTestNetwork(count: number): TestNetwork {
  const tag = String(process.pid % 100_000);
  const used = ip(['-o', 'addr']) + ip(['route']);
  let octet = process.pid % 200 + 20;
  while (used.includes(`10.254.${octet}.`)) octet = (octet + 1) % 250 || 20;
  const subnet = `10.254.${octet}`;
  const bridge = `btbr${tag}`;
  const hosts: TestHost[] = [];
  const remove = (): void => {
    for (const host of hosts) {
      try {
        ip(['netns', 'del', host.namespace]); // takes its veth pair with it
      } catch {
        // already gone
      }
    }
    try {
      ip(['link', 'del', bridge]);
    } catch {
      // already gone
    }
  };
  try {
    ip(['link', 'add', bridge, 'type', 'bridge']);
    ip(['addr', 'add', `${subnet}.1/24`, 'dev', bridge]);
    ip(['link', 'set', bridge, 'up']);
    for (let i = 1; i <= count; i++) {
      const host: TestHost = { name: `h${i}`, namespace: `bt${tag}h${i}`, address: `${subnet}.${10 + i}`, link: `bv${tag}h${i}` };
      hosts.push(host);
      ip(['netns', 'add', host.namespace]);
      ip(['link', 'add', host.link, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', host.namespace]);
      ip(['link', 'set', host.link, 'master', bridge, 'up']);
      ip(['-n', host.namespace, 'addr', 'add', `${host.address}/24`, 'dev', 'eth0']);
      ip(['-n', host.namespace, 'link', 'set', 'eth0', 'up']);
      ip(['-n', host.namespace, 'link', 'set', 'lo', 'up']);
    }
  } catch (error) {
    remove();
    throw error;
  }
  return {
    hosts,
    gateway: `${subnet}.1`,
    cut: (host) => void ip(['link', 'set', host.link, 'down']),
    heal: (host) => void ip(['link', 'set', host.link, 'up']),
    remove,
  };
}
