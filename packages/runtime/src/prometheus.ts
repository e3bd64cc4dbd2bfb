/**
 * @module prometheus
 * A small Prometheus client: counters, gauges and histograms with label sets, a registry that renders the text
 * exposition format (version 0.0.4); the standard process and Node.js series are prometheus-process.ts. It replaces prom-client, whose import
 * alone costs an operator ~20 MiB of resident memory. Guarantees: label names are fixed per metric and checked on every
 * use (a missing or unknown label throws a `UsageError`, as a bad name, a second metric of one name and a counter
 * lowered); label values and help text are escaped; series are rendered in creation
 * order; `collect` callbacks run before each render.
 */
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
  /** Registries rendered with this one, each with its label pairs (`cluster="eu-1"`). */
  readonly #attached = new Map<Registry, string>();

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

  /**
   * Renders `child`'s metrics with this registry's, every series of them with `labels` added (e.g. `{ cluster: 'eu-1' }`
   * for the metrics of a member cluster), until the returned function detaches it; a family both have is rendered once.
   */
  attach(child: Registry, labels: Readonly<Record<string, string>>): () => void {
    for (const k of Object.keys(labels))
      if (!NAME.test(k) || k.includes(':')) throw new UsageError('InvalidArgument', `label name "${k}" is not valid`);
    const pairs = Object.entries(labels)
      .map(([k, v]) => `${k}="${escapeValue(v)}"`)
      .join(',');
    this.#attached.set(child, pairs);
    return () => {
      this.#attached.delete(child);
    };
  }

  /** The text exposition of every metric, then those of the attached registries, each family once. */
  metrics(): string {
    if (this.#attached.size === 0) {
      let out = '';
      for (const m of this.#metrics.values()) out += m.render();
      return out;
    }
    const families = new Map<string, string>();
    for (const m of this.#metrics.values()) families.set(m.name, m.render());
    for (const [child, pairs] of this.#attached) {
      for (const m of child.#metrics.values()) {
        const text = m.render();
        const samples = text
          .split('\n')
          .filter((l) => l !== '' && !l.startsWith('#'))
          .map((l) => `${relabel(l, pairs)}\n`)
          .join('');
        const own = families.get(m.name);
        families.set(
          m.name,
          own === undefined ? text.slice(0, text.length - samplesLength(text)) + samples : own + samples,
        );
      }
    }
    return [...families.values()].join('');
  }
}

/** A sample line with `pairs` first among its labels. */
function relabel(line: string, pairs: string): string {
  const brace = line.indexOf('{');
  const space = line.indexOf(' ');
  if (brace !== -1 && brace < space) return `${line.slice(0, brace + 1)}${pairs},${line.slice(brace + 1)}`;
  return `${line.slice(0, space)}{${pairs}}${line.slice(space)}`;
}

/** The length of a rendered metric's sample lines (what follows its `# HELP` and `# TYPE` lines). */
function samplesLength(text: string): number {
  const second = text.indexOf('\n', text.indexOf('\n') + 1);
  return text.length - (second + 1);
}
