// The standard process metrics (the names of Prometheus's process collector, which etcd exports):
// dashboards and `etcdctl check datascale` (process_resident_memory_bytes) read them. Read from
// Node and /proc at scrape time; where /proc is missing the file-descriptor gauges read -1.
import { readdirSync, readFileSync } from 'node:fs';
import { Gauge, type Registry } from './registry.js';

const startSeconds = Math.floor(Date.now() / 1000 - process.uptime());

export function addProcessMetrics(registry: Registry): void {
  registry.add(new Gauge('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds.', () => {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1e6;
  }, 'counter'));
  registry.add(new Gauge('process_resident_memory_bytes', 'Resident memory size in bytes.', () => process.memoryUsage.rss()));
  registry.add(new Gauge('process_start_time_seconds', 'Start time of the process since unix epoch in seconds.', () => startSeconds));
  registry.add(new Gauge('process_open_fds', 'Number of open file descriptors.', openFds));
  registry.add(new Gauge('process_max_fds', 'Maximum number of open file descriptors.', maxFds));
}

function openFds(): number {
  try {
    return readdirSync('/proc/self/fd').length - 1; // the directory handle readdir itself holds
  } catch {
    return -1;
  }
}

function maxFds(): number {
  try {
    const line = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return line === null || line[1] === 'unlimited' ? -1 : Number(line[1]);
  } catch {
    return -1;
  }
}
