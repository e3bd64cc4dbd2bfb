import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cutDescription, trimDescriptions } from './descriptions.ts';

test('a description is cut as controller-gen cuts it: at a sentence end, else at a space with ..., else hard', () => {
  const text = 'Limits describes the maximum. More info: https://kubernetes.io/docs/concepts/configuration/';
  assert.equal(cutDescription(text, 0), undefined, '0 drops it');
  assert.equal(cutDescription(text, 200), text, 'a shorter one is kept whole');
  assert.equal(cutDescription(text, 40), 'Limits describes the maximum.');
  assert.equal(cutDescription('one two three four', 10), 'one two...');
  assert.equal(cutDescription('abcdefghijklmnop', 5), 'abcde...');
  assert.equal(cutDescription('Ends here. Then more', 10), 'Ends here.');
  assert.equal(cutDescription('Größe ändern. Später', 14), 'Größe ändern.', 'non-ASCII counts by character');
});

test('only the description keyword of schema nodes is cut; a property named description is kept', () => {
  const schema = {
    type: 'object',
    description: 'The root. It has words.',
    properties: {
      description: { type: 'string', description: 'A field named description. Long.' },
      list: { type: 'array', items: { type: 'string', description: 'Item. More.' } },
      map: { type: 'object', additionalProperties: { type: 'string', description: 'Value. More.' } },
      either: { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] },
    },
  };
  const before = JSON.stringify(schema);
  const out = trimDescriptions(schema, 0);
  assert.equal(JSON.stringify(schema), before, 'the input is unchanged');
  assert.equal(JSON.stringify(out).includes('"description":"'), false, 'no description keyword is left');
  assert.deepEqual(Object.keys((out.properties as Record<string, unknown>) ?? {}), [
    'description',
    'list',
    'map',
    'either',
  ]);
  const cut = trimDescriptions(schema, 12) as {
    description: string;
    properties: { list: { items: { description: string } } };
  };
  assert.equal(cut.description, 'The root.');
  assert.equal(cut.properties.list.items.description, 'Item. More.');
});
