// Debian's etcdctl 3.4 for the etcd compatibility tests: ETCDCTL_PATH, or the usual places; null
// when none runs (the tests then skip and say why).
import { spawnSync } from 'node:child_process';

export function findEtcdctl(): string | null {
  for (const candidate of [process.env['ETCDCTL_PATH'], '/usr/bin/etcdctl', '/usr/local/bin/etcdctl']) {
    if (candidate === undefined || candidate === '') continue;
    if (spawnSync(candidate, ['version'], { env: { ...process.env, ETCDCTL_API: '3' } }).status === 0) return candidate;
  }
  return null;
}
