/**
 * @module prometheus-process
 * The standard process_* and nodejs_* series of the Prometheus client (prometheus.ts), as prom-client names them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { Registry } from './prometheus.ts';

/**
 * The standard process_* and nodejs_* series (CPU, resident memory, file descriptors, start time, heap, event-loop
 * delay and utilization, version), read when scraped. Guarantees: nothing here wakes an idle process more than once a
 * second — the event-loop delay is sampled by a 1 s timer (`monitorEventLoopDelay` at prom-client's 10 ms costs an idle
 * operator ~5 ms of CPU a second, more than a whole idle Go controller-runtime process), and the utilization comes
 * from libuv's own idle-time accounting, with no timer at all.
 */
export function registerProcessMetrics(registry: Registry): void {
  registerCpuMetrics(registry);
  if (process.platform === 'linux') registerFdMetrics(registry);
  registerNodeMetrics(registry);
}

/** CPU time, start time and resident memory: process_*. */
function registerCpuMetrics(registry: Registry): void {
  const cpu = () => process.cpuUsage();
  registry.counter({
    name: 'process_cpu_user_seconds_total',
    help: 'Total user CPU time spent in seconds.',
    collect: (m) => {
      m.mirror(undefined, cpu().user / 1e6);
    },
  });
  registry.counter({
    name: 'process_cpu_system_seconds_total',
    help: 'Total system CPU time spent in seconds.',
    collect: (m) => {
      m.mirror(undefined, cpu().system / 1e6);
    },
  });
  registry.counter({
    name: 'process_cpu_seconds_total',
    help: 'Total user and system CPU time spent in seconds.',
    collect: (m) => {
      const c = cpu();
      m.mirror(undefined, (c.user + c.system) / 1e6);
    },
  });
  const started = Math.round(Date.now() / 1000 - process.uptime());
  registry.gauge({
    name: 'process_start_time_seconds',
    help: 'Start time of the process since unix epoch in seconds.',
    collect: (m) => {
      m.set(undefined, started);
    },
  });
  registry.gauge({
    name: 'process_resident_memory_bytes',
    help: 'Resident memory size in bytes.',
    collect: (m) => {
      m.set(undefined, process.memoryUsage.rss());
    },
  });
}

/** Open and maximum file descriptors, from /proc (Linux only). */
function registerFdMetrics(registry: Registry): void {
  registry.gauge({
    name: 'process_open_fds',
    help: 'Number of open file descriptors.',
    collect: (m) => {
      try {
        m.set(undefined, readdirSync('/proc/self/fd').length);
      } catch {
        // /proc unavailable: the series stays at its last value
      }
    },
  });
  const limit = (() => {
    try {
      const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
      return m ? Number(m[1]) : undefined;
    } catch {
      return undefined;
    }
  })();
  if (limit !== undefined)
    registry.gauge({
      name: 'process_max_fds',
      help: 'Maximum number of open file descriptors.',
      collect: (m) => {
        m.set(undefined, limit);
      },
    });
}

/** Heap, external memory, event-loop delay and utilization, and the version: nodejs_*. */
function registerNodeMetrics(registry: Registry): void {
  const heap = (name: string, help: string, read: (m: NodeJS.MemoryUsage) => number) =>
    registry.gauge({
      name,
      help,
      collect: (m) => {
        m.set(undefined, read(process.memoryUsage()));
      },
    });
  heap('nodejs_heap_size_total_bytes', 'Process heap size from Node.js in bytes.', (m) => m.heapTotal);
  heap('nodejs_heap_size_used_bytes', 'Process heap size used from Node.js in bytes.', (m) => m.heapUsed);
  heap('nodejs_external_memory_bytes', 'Node.js external memory size in bytes.', (m) => m.external);
  const delay = monitorEventLoopDelay({ resolution: 1_000 });
  delay.enable();
  registry.gauge<'quantile'>({
    name: 'nodejs_eventloop_delay_seconds',
    help: 'Event loop delay in seconds since the last scrape, by quantile.',
    labelNames: ['quantile'],
    collect: (m) => {
      for (const q of [0.5, 0.9, 0.99]) m.set({ quantile: q }, delay.percentile(q * 100) / 1e9);
      delay.reset();
    },
  });
  let utilization = performance.eventLoopUtilization();
  registry.gauge({
    name: 'nodejs_eventloop_utilization_ratio',
    help: 'Share of the time since the last scrape the event loop spent running callbacks (0 to 1).',
    collect: (m) => {
      const now = performance.eventLoopUtilization();
      m.set(undefined, performance.eventLoopUtilization(now, utilization).utilization);
      utilization = now;
    },
  });
  registry.gauge<'version' | 'major' | 'minor' | 'patch'>({
    name: 'nodejs_version_info',
    help: 'Node.js version info.',
    labelNames: ['version', 'major', 'minor', 'patch'],
    collect: (m) => {
      const [major = '', minor = '', patch = ''] = process.versions.node.split('.');
      m.set({ version: process.version, major, minor, patch }, 1);
    },
  });
}
