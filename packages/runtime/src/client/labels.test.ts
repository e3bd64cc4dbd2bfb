import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseSelector, Selector, SelectorError } from './labels.ts';

test('parses every requirement form and matches labels', () => {
  const s = parseSelector('app=web, tier in (a, b),env!=prod,owner,!legacy,zone notin (z1)');
  assert.equal(s.requirements.length, 6);
  assert.ok(s.matches({ app: 'web', tier: 'b', owner: 'x', env: 'dev' }));
  assert.ok(!s.matches({ app: 'web', tier: 'c', owner: 'x' }));
  assert.ok(!s.matches({ app: 'web', tier: 'a', owner: 'x', legacy: '1' }));
  assert.ok(!s.matches({ app: 'web', tier: 'a' }), 'owner must exist');
  assert.ok(!s.matches({ app: 'web', tier: 'a', owner: 'x', zone: 'z1' }));
  assert.equal(s.toString(), 'app=web,tier in (a,b),env!=prod,owner,!legacy,zone!=z1');
  assert.ok(parseSelector('').matches({}), 'the empty selector matches everything');
});

test('builds from matchLabels records and LabelSelector objects', () => {
  assert.equal(Selector.from({ app: 'a', 'app.kubernetes.io/name': 'b' }).toString(), 'app=a,app.kubernetes.io/name=b');
  const s = Selector.from({ matchLabels: { a: '1' }, matchExpressions: [{ key: 'b', operator: 'Exists' }] });
  assert.ok(s.matches({ a: '1', b: '' }));
  assert.ok(!s.matches({ a: '1' }));
});

test('a malformed selector names the requirement at fault', () => {
  assert.throws(
    () => parseSelector('app=web,,x'),
    (e) => e instanceof SelectorError && /"" is empty/.test(e.message),
  );
  assert.throws(() => parseSelector('tier in ()'), /needs at least one value/);
  assert.throws(() => parseSelector('bad key=1'), SelectorError);
  assert.throws(() => Selector.from({ matchExpressions: [{ key: 'a', operator: 'Like' }] }), /unknown operator "Like"/);
});
