import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../client/resource.ts';
import { allow, and, generationChanged, labelsChanged, not, or, predicate } from './predicates.ts';

const o = (generation: number, labels: Record<string, string> = {}): KubeObject => ({
  metadata: { name: 'x', generation, labels },
});

test('built-in predicates and their combinations', () => {
  assert.equal(allow([generationChanged], 'update', o(1), o(2)), true);
  assert.equal(allow([generationChanged], 'update', o(1), o(1, { a: 'b' })), false);
  assert.equal(allow([generationChanged], 'create', undefined, o(1)), true, 'no create method: let it through');
  assert.equal(allow([or(generationChanged, labelsChanged)], 'update', o(1), o(1, { a: 'b' })), true);
  assert.equal(allow([and(generationChanged, labelsChanged)], 'update', o(1), o(2)), false);
  assert.equal(allow([not(generationChanged)], 'update', o(1), o(2)), false);
  const named = predicate<KubeObject>((obj) => obj.metadata.name === 'x');
  assert.equal(allow([named], 'delete', undefined, o(1)), true);
});
