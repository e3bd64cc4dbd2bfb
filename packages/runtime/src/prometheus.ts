/**
 * @module prometheus
 * A small Prometheus client: counters, gauges and histograms with label sets, a registry that renders the text
 * exposition format (version 0.0.4), and the standard process and Node.js series. It replaces prom-client, whose import
 * alone costs an operator ~20 MiB of resident memory. Guarantees: label names are fixed per metric and checked on every
 * use (a missing or unknown label throws a `UsageError`, as a bad name, a second metric of one name and a counter
 * lowered); label values and help text are escaped; series are rendered in creation
 * order; `collect` callbacks run before each render.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { UsageError } from './errors.ts';

/** A series' label values, one for each of the metric's label names. */
export type Labels<L extends string> = { readonly [K in L]: string | number };

/** How a metric is named and labelled. */
export interface MetricOptions<L extends string, Self> {
  /** The metric's name, e.g. `myoperator_backups_total` (a valid Prometheus name; unique per registry). */
  readonly name: string;
  /** What it measures (the `# HELP` line). */
  readonly help: string;
  /** The names of its labels; every use must give a value for each (none by default). */
  readonly labelNames?: readonly L[];
  /** Runs before each render with the metric itself: set its current values here. */
  readonly collect?: (self: Self) => void;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const escapeHelp = (s: string) => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
const escapeValue = (s: string) => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const num = (n: number) => (Number.isNaN(n) ? 'NaN' : n === Infinity ? '+Inf' : n === -Infinity ? '-Inf' : String(n));

abstract class Metric<L extends string, Self> {
  /** The metric's name. */
  readonly name: string;
  /** What it measures. */
  readonly help: string;
  /** The names of its labels. */
  readonly labelNames: readonly L[];
  readonly #collect: ((self: Self) => void) | undefined;
  abstract readonly type: 'counter' | 'gauge' | 'histogram';

  constructor(o: MetricOptions<L, Self>) {
    if (!NAME.test(o.name))
      throw new UsageError('InvalidArgument', `metric name "${o.name}" is not a valid Prometheus name`);
    this.name = o.name;
    this.help = o.help;
    this.labelNames = o.labelNames ?? [];
    this.#collect = o.collect;
  }

  /** The series key and its rendered label pairs; throws on a missing or unknown label. */
  protected key(labels: Labels<L> | undefined): string {
    const given = labels ? Object.keys(labels) : [];
    for (const k of given)
      if (!(this.labelNames as readonly string[]).includes(k))
        throw new UsageError(
          'InvalidArgument',
          `metric ${this.name}: unknown label "${k}" (labels: ${this.labelNames.join(', ') || 'none'})`,
        );
    if (given.length !== this.labelNames.length)
      throw new UsageError(
        'InvalidArgument',
        `metric ${this.name}: labels ${this.labelNames.join(', ')} are all required`,
      );
    return this.labelNames.map((k) => `${k}="${escapeValue(String(labels?.[k]))}"`).join(',');
  }

  /** Its text exposition (`# HELP`, `# TYPE` and its series), after running its `collect` callback. */
  render(): string {
    try {
      this.#collect?.(this as unknown as Self);
    } catch {
      // a failing probe leaves its last values: one metric must not take /metrics down
    }
    return `# HELP ${this.name} ${escapeHelp(this.help)}\n# TYPE ${this.name} ${this.type}\n${this.samples()}`;
  }

  protected abstract samples(): string;
}

const line = (name: string, pairs: string, value: number) => `${name}${pairs ? `{${pairs}}` : ''} ${num(value)}\n`;

/** A Prometheus counter: a value per label set that only goes up. */
export class Counter<L extends string = never> extends Metric<L, Counter<L>> {
  readonly type = 'counter';
  readonly #values = new Map<string, number>();

  /** Adds `by` (default 1, never negative) to the series of `labels`. */
  inc(labels?: Labels<L>, by = 1): void {
    if (!(by >= 0))
      throw new UsageError('InvalidArgument', `metric ${this.name}: a counter only goes up (inc by ${by})`);
    const k = this.key(labels);
    this.#values.set(k, (this.#values.get(k) ?? 0) + by);
  }

  /** For a counter mirrored from a total kept elsewhere (e.g. the kernel's CPU time): never lowers the value. */
  mirror(labels: Labels<L> | undefined, total: number): void {
    const k = this.key(labels);
    this.#values.set(k, Math.max(this.#values.get(k) ?? 0, total));
  }

  protected samples(): string {
    let out = '';
    for (const [k, v] of this.#values) out += line(this.name, k, v);
    return out;
  }
}

/** A Prometheus gauge: a value per label set that goes up and down. */
export class Gauge<L extends string = never> extends Metric<L, Gauge<L>> {
  readonly type = 'gauge';
  readonly #values = new Map<string, number>();

  /** Sets the series of `labels` to `value`. */
  set(labels: Labels<L> | undefined, value: number): void {
    this.#values.set(this.key(labels), value);
  }

  /** Adds `by` (default 1) to the series of `labels`. */
  inc(labels?: Labels<L>, by = 1): void {
    const k = this.key(labels);
    this.#values.set(k, (this.#values.get(k) ?? 0) + by);
  }

  /** Subtracts `by` (default 1) from the series of `labels`. */
  dec(labels?: Labels<L>, by = 1): void {
    this.inc(labels, -by);
  }

  /** Removes every series (a `collect` callback that reports what exists now starts with it). */
  reset(): void {
    this.#values.clear();
  }

  protected samples(): string {
    let out = '';
    for (const [k, v] of this.#values) out += line(this.name, k, v);
    return out;
  }
}

export const DEFAULT_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** A Prometheus histogram: per label set, counts of observed values by bucket, their sum and their count. */
export class Histogram<L extends string = never> extends Metric<L, Histogram<L>> {
  readonly type = 'histogram';
  /** The upper bounds of its buckets, ascending (default `DEFAULT_BUCKETS`, in seconds); `+Inf` is implied. */
  readonly buckets: readonly number[];
  readonly #series = new Map<string, { counts: number[]; sum: number; count: number }>();

  constructor(o: MetricOptions<L, Histogram<L>> & { readonly buckets?: readonly number[] }) {
    super(o);
    this.buckets = [...(o.buckets ?? DEFAULT_BUCKETS)].sort((a, b) => a - b);
  }

  /** Records `value` (e.g. a duration in seconds) in the series of `labels`. */
  observe(labels: Labels<L> | undefined, value: number): void {
    const k = this.key(labels);
    let s = this.#series.get(k);
    if (!s) {
      s = { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.#series.set(k, s);
    }
    const i = this.buckets.findIndex((b) => value <= b);
    if (i >= 0) s.counts[i] = (s.counts[i] ?? 0) + 1;
    s.sum += value;
    s.count += 1;
  }

  protected samples(): string {
    let out = '';
    for (const [k, s] of this.#series) {
      const sep = k ? `${k},` : '';
      let cumulative = 0;
      this.buckets.forEach((b, i) => {
        cumulative += s.counts[i] ?? 0;
        out += line(`${this.name}_bucket`, `${sep}le="${num(b)}"`, cumulative);
      });
      out += line(`${this.name}_bucket`, `${sep}le="+Inf"`, s.count);
      out += line(`${this.name}_sum`, k, s.sum);
      out += line(`${this.name}_count`, k, s.count);
    }
    return out;
  }
}

/** What a registry holds: anything with a name that renders its own exposition. */
export interface Renderable {
  readonly name: string;
  render(): string;
}

/** The metrics of a process, rendered together in the text exposition format for /metrics. */
export class Registry {
  /** The Content-Type of `metrics()`'s text (version 0.0.4). */
  readonly contentType = 'text/plain; version=0.0.4; charset=utf-8';
  readonly #metrics = new Map<string, Renderable>();

  /** Adds a metric; a second metric with the same name is refused. */
  register<M extends Renderable>(metric: M): M {
    if (this.#metrics.has(metric.name))
      throw new UsageError('InvalidArgument', `metric ${metric.name} is already registered`);
    this.#metrics.set(metric.name, metric);
    return metric;
  }

  /** Creates and registers a counter; throws when the name is taken. */
  counter<L extends string = never>(o: MetricOptions<L, Counter<L>>): Counter<L> {
    return this.register(new Counter<L>(o));
  }

  /** Creates and registers a gauge; throws when the name is taken. */
  gauge<L extends string = never>(o: MetricOptions<L, Gauge<L>>): Gauge<L> {
    return this.register(new Gauge<L>(o));
  }

  /** Creates and registers a histogram (with `buckets`, default `DEFAULT_BUCKETS`); throws when the name is taken. */
  histogram<L extends string = never>(
    o: MetricOptions<L, Histogram<L>> & { readonly buckets?: readonly number[] },
  ): Histogram<L> {
    return this.register(new Histogram<L>(o));
  }

  /** The text exposition of every metric. */
  metrics(): string {
    let out = '';
    for (const m of this.#metrics.values()) out += m.render();
    return out;
  }
}

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
