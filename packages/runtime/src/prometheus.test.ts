import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Counter, Gauge, Histogram, Registry } from './prometheus.ts';
import { registerProcessMetrics } from './prometheus-process.ts';

test('counters, gauges and histograms render the text exposition format', () => {
  const r = new Registry();
  const c = r.counter<'code'>({ name: 'requests_total', help: 'Requests.\nBy code', labelNames: ['code'] });
  c.inc({ code: '200' });
  c.inc({ code: '200' }, 2);
  c.inc({ code: '5"0\\0' });
  const g = r.gauge({ name: 'depth', help: 'Depth' });
  g.set(undefined, 3);
  g.dec();
  const h = r.histogram<'verb'>({ name: 'latency_seconds', help: 'Latency', labelNames: ['verb'], buckets: [1, 0.1] });
  h.observe({ verb: 'GET' }, 0.05);
  h.observe({ verb: 'GET' }, 0.5);
  h.observe({ verb: 'GET' }, 5);
  assert.equal(
    r.metrics(),
    [
      '# HELP requests_total Requests.\\nBy code',
      '# TYPE requests_total counter',
      'requests_total{code="200"} 3',
      'requests_total{code="5\\"0\\\\0"} 1',
      '# HELP depth Depth',
      '# TYPE depth gauge',
      'depth 2',
      '# HELP latency_seconds Latency',
      '# TYPE latency_seconds histogram',
      'latency_seconds_bucket{verb="GET",le="0.1"} 1',
      'latency_seconds_bucket{verb="GET",le="1"} 2',
      'latency_seconds_bucket{verb="GET",le="+Inf"} 3',
      'latency_seconds_sum{verb="GET"} 5.55',
      'latency_seconds_count{verb="GET"} 3',
      '',
    ].join('\n'),
  );
});

test('labels are checked, counters only go up, names are unique and valid', () => {
  const r = new Registry();
  const c = r.counter<'a'>({ name: 'x_total', help: 'x', labelNames: ['a'] });
  assert.throws(() => c.inc({ a: '1', b: '2' } as never), /unknown label "b"/);
  assert.throws(() => c.inc(), /labels a are all required/);
  assert.throws(() => c.inc({ a: '1' }, -1), /only goes up/);
  assert.throws(() => r.counter({ name: 'x_total', help: 'again' }), /already registered/);
  assert.throws(() => new Gauge({ name: 'bad-name', help: 'x' }), /not a valid Prometheus name/);
  c.mirror({ a: '1' }, 5);
  c.mirror({ a: '1' }, 4);
  assert.match(r.metrics(), /x_total\{a="1"\} 5\n/);
});

test('collect callbacks set values when scraped', () => {
  const r = new Registry();
  let n = 0;
  r.gauge({ name: 'scrapes', help: 'Scrapes', collect: (g) => g.set(undefined, ++n) });
  assert.match(r.metrics(), /scrapes 1\n/);
  assert.match(r.metrics(), /scrapes 2\n/);
});

test('process metrics: CPU, memory, descriptors, heap, event loop, version', () => {
  const r = new Registry();
  registerProcessMetrics(r);
  const text = r.metrics();
  for (const name of [
    'process_cpu_seconds_total',
    'process_resident_memory_bytes',
    'process_start_time_seconds',
    'process_open_fds',
    'nodejs_heap_size_used_bytes',
    'nodejs_eventloop_delay_seconds{quantile="0.99"}',
    'nodejs_eventloop_utilization_ratio',
    'nodejs_version_info{version=',
  ])
    assert.ok(text.includes(`\n${name}`), `${name} missing`);
  const rss = Number(/\nprocess_resident_memory_bytes (\d+)/.exec(text)?.[1]);
  assert.ok(rss > 10 * 2 ** 20, `rss ${rss}`);
  const busy = Number(/\nnodejs_eventloop_utilization_ratio (\S+)/.exec(r.metrics())?.[1]);
  assert.ok(busy >= 0 && busy <= 1, `utilization ${busy}`);
});

test('a histogram without observations renders only its header; Counter and Histogram work unregistered', () => {
  const h = new Histogram({ name: 'h', help: 'h' });
  assert.equal(h.render(), '# HELP h h\n# TYPE h histogram\n');
  const c = new Counter({ name: 'c', help: 'c' });
  c.inc();
  assert.equal(c.render(), '# HELP c c\n# TYPE c counter\nc 1\n');
});

test('an attached registry renders with its labels added to every series, in the families both have, until detached', () => {
  const parent = new Registry();
  const child = new Registry();
  parent.counter({ name: 'reqs_total', help: 'Requests.', labelNames: ['code'] }).inc({ code: 200 });
  child.counter({ name: 'reqs_total', help: 'Requests.', labelNames: ['code'] }).inc({ code: 500 }, 2);
  child.gauge({ name: 'up', help: 'Up.' }).set(undefined, 1);
  child.histogram({ name: 'lat_seconds', help: 'Latency.', buckets: [1] }).observe(undefined, 0.5);
  const detach = parent.attach(child, { cluster: 'eu-"1"' });
  const text = parent.metrics();
  assert.equal(text.match(/# TYPE reqs_total/g)?.length, 1, text);
  assert.match(text, /^reqs_total\{code="200"\} 1\nreqs_total\{cluster="eu-\\"1\\"",code="500"\} 2$/m);
  assert.match(text, /^up\{cluster="eu-\\"1\\""\} 1$/m);
  assert.match(text, /^lat_seconds_bucket\{cluster="eu-\\"1\\"",le="1"\} 1$/m);
  assert.match(text, /^lat_seconds_count\{cluster="eu-\\"1\\""\} 1$/m);
  detach();
  assert.doesNotMatch(parent.metrics(), /cluster=/);
  assert.throws(() => parent.attach(child, { 'bad-name': 'x' }), /label name "bad-name" is not valid/);
});
