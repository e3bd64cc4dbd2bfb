import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TSchema } from '@sinclair/typebox';
import { Type } from '@sinclair/typebox';
import { CrdSchemaError, structuralSchema } from './schema.ts';

/** Asserts that converting `schema` fails at `path` with a message matching `message`. */
function rejects(schema: TSchema, path: string, message: RegExp, base = 'spec'): void {
  assert.throws(
    () => structuralSchema(schema, base),
    (e: unknown) => {
      assert.ok(e instanceof CrdSchemaError, `expected a CrdSchemaError, got ${String(e)}`);
      assert.equal(e.path, path);
      assert.match(e.message, message);
      return true;
    },
  );
}

test('objects: properties, required from non-optional members, additionalProperties: false and $id dropped', () => {
  const schema = Type.Object(
    { name: Type.String({ minLength: 1, maxLength: 63 }), note: Type.Optional(Type.String()) },
    { additionalProperties: false, $id: 'Thing', description: 'A thing.' },
  );
  assert.deepEqual(structuralSchema(schema), {
    type: 'object',
    description: 'A thing.',
    properties: { name: { type: 'string', maxLength: 63, minLength: 1 }, note: { type: 'string' } },
    required: ['name'],
  });
  const allOptional = structuralSchema(Type.Object({ a: Type.Optional(Type.Boolean()) }));
  assert.deepEqual(allOptional, { type: 'object', properties: { a: { type: 'boolean' } } });
  assert.equal(Object.getOwnPropertySymbols(structuralSchema(schema)).length, 0, 'no TypeBox symbols');
});

test('scalars and arrays keep their validations and integer formats', () => {
  assert.deepEqual(structuralSchema(Type.Integer({ format: 'int32', minimum: 0, maximum: 10, default: 1 })), {
    type: 'integer',
    default: 1,
    format: 'int32',
    maximum: 10,
    minimum: 0,
  });
  assert.deepEqual(structuralSchema(Type.Integer({ format: 'int64', multipleOf: 2 })), {
    type: 'integer',
    format: 'int64',
    multipleOf: 2,
  });
  assert.deepEqual(structuralSchema(Type.String({ pattern: '^[a-z]+$', format: 'date-time', title: 'T' })), {
    type: 'string',
    format: 'date-time',
    pattern: '^[a-z]+$',
    title: 'T',
  });
  assert.deepEqual(structuralSchema(Type.Array(Type.String(), { minItems: 1, maxItems: 5, uniqueItems: false })), {
    type: 'array',
    items: { type: 'string' },
    maxItems: 5,
    minItems: 1,
  });
  assert.deepEqual(structuralSchema(Type.Object({}, { minProperties: 1, maxProperties: 3 })), {
    type: 'object',
    maxProperties: 3,
    minProperties: 1,
    properties: {},
  });
});

test('draft exclusiveMinimum/Maximum numbers become OpenAPI v3 booleans', () => {
  assert.deepEqual(structuralSchema(Type.Number({ exclusiveMinimum: 5 })), {
    type: 'number',
    exclusiveMinimum: true,
    minimum: 5,
  });
  assert.deepEqual(structuralSchema(Type.Number({ exclusiveMaximum: 1.5, maximum: 2 })), {
    type: 'number',
    exclusiveMaximum: true,
    maximum: 1.5,
  });
  // the inclusive bound is stricter: it wins, and no exclusive flag is needed
  assert.deepEqual(structuralSchema(Type.Number({ exclusiveMinimum: 1, minimum: 3 })), { type: 'number', minimum: 3 });
  // OpenAPI v3 style (via Type.Unsafe) passes through
  assert.deepEqual(structuralSchema(Type.Unsafe<number>({ type: 'number', minimum: 0, exclusiveMinimum: true })), {
    type: 'number',
    exclusiveMinimum: true,
    minimum: 0,
  });
  rejects(Type.Unsafe<number>({ type: 'number', exclusiveMaximum: true }), 'spec', /"exclusiveMaximum": true needs/);
});

test('literals and unions of literals of one type become type + enum', () => {
  assert.deepEqual(structuralSchema(Type.Literal('Always')), { type: 'string', enum: ['Always'] });
  assert.deepEqual(structuralSchema(Type.Literal(true)), { type: 'boolean', enum: [true] });
  const policy = Type.Union([Type.Literal('Always'), Type.Literal('Never'), Type.Literal('IfNotPresent')], {
    default: 'Always',
    description: 'Pull policy.',
  });
  assert.deepEqual(structuralSchema(policy), {
    type: 'string',
    default: 'Always',
    description: 'Pull policy.',
    enum: ['Always', 'Never', 'IfNotPresent'],
  });
  assert.deepEqual(structuralSchema(Type.Union([Type.Literal(1), Type.Literal(2)])), {
    type: 'number',
    enum: [1, 2],
  });
  // nested unions are flattened, duplicates removed
  const nested = Type.Union([Type.Union([Type.Literal('a'), Type.Literal('b')]), Type.Literal('a')]);
  assert.deepEqual(structuralSchema(nested), { type: 'string', enum: ['a', 'b'] });
  assert.deepEqual(structuralSchema(Type.Enum({ A: 'a', B: 'b' })), { type: 'string', enum: ['a', 'b'] });
});

test('X | null becomes nullable (with null in the enum of a nullable enum)', () => {
  assert.deepEqual(structuralSchema(Type.Union([Type.String({ maxLength: 3 }), Type.Null()])), {
    type: 'string',
    maxLength: 3,
    nullable: true,
  });
  assert.deepEqual(structuralSchema(Type.Union([Type.Literal('a'), Type.Literal('b'), Type.Null()])), {
    type: 'string',
    enum: ['a', 'b', null],
    nullable: true,
  });
});

test('other unions are rejected with a hint towards an enum or int-or-string', () => {
  const schema = Type.Object({ port: Type.Union([Type.Integer(), Type.String()]) });
  rejects(schema, 'spec.port', /union of integer \| string is not structural.*enum.*x-kubernetes-int-or-string/);
  rejects(Type.Union([Type.Literal('a'), Type.Literal(1)]), 'spec', /literals of different types \(string, number\)/);
  rejects(
    Type.Object({ a: Type.Union([Type.Object({ x: Type.String() }), Type.Object({ y: Type.String() })]) }),
    'spec.a',
    /union of object \| object/,
  );
});

test('Type.Record(Type.String(), X) becomes additionalProperties: X', () => {
  const limits = Type.Record(Type.String(), Type.Integer({ minimum: 0 }), { description: 'Limits.' });
  assert.deepEqual(structuralSchema(limits), {
    type: 'object',
    additionalProperties: { type: 'integer', minimum: 0 },
    description: 'Limits.',
  });
  assert.deepEqual(structuralSchema(Type.Object({ labels: Type.Record(Type.String(), Type.String()) })), {
    type: 'object',
    properties: { labels: { type: 'object', additionalProperties: { type: 'string' } } },
    required: ['labels'],
  });
  rejects(Type.Record(Type.Number(), Type.String()), 'spec', /patternProperties .* cannot be expressed.*CEL/);
  rejects(
    Type.Object({ a: Type.String() }, { additionalProperties: Type.String() }),
    'spec',
    /properties and additionalProperties .* mutually exclusive/,
  );
  // additionalProperties: true is allowed (free-form values of a map or object)
  assert.deepEqual(structuralSchema(Type.Unsafe({ type: 'object', additionalProperties: true })), {
    type: 'object',
    additionalProperties: true,
  });
});

test('uniqueItems: true is rejected in favour of x-kubernetes-list-type: set', () => {
  rejects(Type.Object({ tags: Type.Array(Type.String(), { uniqueItems: true }) }), 'spec.tags', /list-type": "set"/);
});

test('Type.Any/Unknown need x-kubernetes-preserve-unknown-fields', () => {
  rejects(Type.Object({ raw: Type.Any() }), 'spec.raw', /Type.Any has no type.*x-kubernetes-preserve-unknown-fields/);
  rejects(Type.Object({ raw: Type.Unknown() }), 'spec.raw', /Type.Unknown has no type/);
  assert.deepEqual(structuralSchema(Type.Unknown({ 'x-kubernetes-preserve-unknown-fields': true })), {
    'x-kubernetes-preserve-unknown-fields': true,
  });
  assert.deepEqual(
    structuralSchema(Type.Object({}, { 'x-kubernetes-preserve-unknown-fields': true, description: 'Free-form.' })),
    { type: 'object', description: 'Free-form.', properties: {}, 'x-kubernetes-preserve-unknown-fields': true },
  );
});

test('a node without a type is an error naming its JSON path', () => {
  const env = Type.Array(Type.Object({ name: Type.String(), value: Type.Optional(Type.Unsafe<string>({})) }));
  rejects(Type.Object({ env }), 'spec.env[].value', /has no type/);
  rejects(Type.Object({ m: Type.Record(Type.String(), Type.Unsafe({})) }), 'spec.m.*', /has no type/);
  assert.throws(() => structuralSchema(Type.Unsafe({})), /^CrdSchemaError: \(root\): has no type/);
});

test('int-or-string: as a TypeBox union or a raw schema', () => {
  const expected = {
    anyOf: [{ type: 'integer' }, { type: 'string' }],
    'x-kubernetes-int-or-string': true,
  };
  const union = Type.Union([Type.String(), Type.Integer()], { 'x-kubernetes-int-or-string': true });
  assert.deepEqual(structuralSchema(union), expected);
  const raw = Type.Unsafe<number | string>({
    'x-kubernetes-int-or-string': true,
    anyOf: [{ type: 'integer' }, { type: 'string' }],
    pattern: '^[0-9]+m?$',
  });
  assert.deepEqual(structuralSchema(raw), { ...expected, pattern: '^[0-9]+m?$' });
  assert.deepEqual(structuralSchema(Type.Unsafe({ 'x-kubernetes-int-or-string': true })), {
    'x-kubernetes-int-or-string': true,
  });
  const allOf = Type.Unsafe({
    'x-kubernetes-int-or-string': true,
    allOf: [{ anyOf: [{ type: 'integer' }, { type: 'string' }] }, { pattern: '^x' }],
  });
  assert.deepEqual(structuralSchema(allOf), {
    allOf: [{ anyOf: [{ type: 'integer' }, { type: 'string' }] }, { pattern: '^x' }],
    'x-kubernetes-int-or-string': true,
  });
  rejects(
    Type.Unsafe({ 'x-kubernetes-int-or-string': true, 'x-kubernetes-preserve-unknown-fields': true }),
    'spec',
    /cannot both be set/,
  );
});

test('Kubernetes extensions pass through and are checked', () => {
  const list = Type.Array(Type.Object({ name: Type.String(), port: Type.Optional(Type.Integer()) }), {
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['name'],
  });
  const out = structuralSchema(Type.Object({ ports: list }));
  assert.deepEqual((out.properties as Record<string, unknown>).ports, {
    type: 'array',
    items: {
      type: 'object',
      properties: { name: { type: 'string' }, port: { type: 'integer' } },
      required: ['name'],
    },
    'x-kubernetes-list-map-keys': ['name'],
    'x-kubernetes-list-type': 'map',
  });
  const keyNotRequired = Type.Array(Type.Object({ name: Type.Optional(Type.String()) }), {
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['name'],
  });
  rejects(Type.Object({ ports: keyNotRequired }), 'spec.ports[].name', /must be required or have a default/);
  rejects(Type.Array(Type.String(), { 'x-kubernetes-list-type': 'map' }), 'spec', /needs "x-kubernetes-list-map-keys"/);
  rejects(Type.Array(Type.String(), { 'x-kubernetes-list-type': 'bag' }), 'spec', /one of atomic, set, map/);
  rejects(Type.String({ 'x-kubernetes-list-type': 'set' }), 'spec', /needs type "array"/);

  const map = Type.Record(Type.String(), Type.String(), { 'x-kubernetes-map-type': 'atomic' });
  assert.equal(structuralSchema(map)['x-kubernetes-map-type'], 'atomic');
  const embedded = Type.Object(
    {},
    { 'x-kubernetes-embedded-resource': true, 'x-kubernetes-preserve-unknown-fields': true },
  );
  assert.equal(structuralSchema(embedded)['x-kubernetes-embedded-resource'], true);

  const rules = Type.Object(
    { min: Type.Integer(), max: Type.Integer() },
    {
      'x-kubernetes-validations': [
        { message: 'min must not exceed max', rule: 'self.min <= self.max', reason: 'FieldValueInvalid' },
      ],
    },
  );
  assert.deepEqual(structuralSchema(rules)['x-kubernetes-validations'], [
    { rule: 'self.min <= self.max', message: 'min must not exceed max', reason: 'FieldValueInvalid' },
  ]);
  rejects(
    Type.Object({}, { 'x-kubernetes-validations': [{ rule: ' ' }] }),
    'spec.x-kubernetes-validations[0]',
    /rule must be a non-empty CEL expression/,
  );
  rejects(
    Type.Object({}, { 'x-kubernetes-validations': [{ rule: 'true', reason: 'Nope' }] }),
    'spec.x-kubernetes-validations[0]',
    /reason must be one of/,
  );
  rejects(Type.String({ 'x-kubernetes-made-up': true }), 'spec', /unknown Kubernetes extension/);
});

test('allOf/anyOf/oneOf/not stay value validations over declared fields', () => {
  const exclusive = Type.Unsafe({
    type: 'object',
    properties: { a: { type: 'string' }, b: { type: 'string' } },
    oneOf: [{ required: ['a'] }, { required: ['b'] }],
  });
  assert.deepEqual(structuralSchema(exclusive), {
    type: 'object',
    oneOf: [{ required: ['a'] }, { required: ['b'] }],
    properties: { a: { type: 'string' }, b: { type: 'string' } },
  });
  // a type equal to the field's own is redundant and dropped; descriptions too
  const ip = Type.String({
    anyOf: [Type.String({ format: 'ipv4' }), Type.String({ format: 'ipv6', description: 'v6' })],
  });
  assert.deepEqual(structuralSchema(ip), { type: 'string', anyOf: [{ format: 'ipv4' }, { format: 'ipv6' }] });
  const nested = Type.Unsafe({
    type: 'object',
    properties: { a: { type: 'integer' } },
    not: { properties: { a: { const: 0 } } },
  });
  assert.deepEqual(structuralSchema(nested).not, { properties: { a: { enum: [0] } } });
  rejects(
    Type.Unsafe({ type: 'object', properties: { a: { type: 'string' } }, anyOf: [{ properties: { b: {} } }] }),
    'spec.anyOf[0].b',
    /must also be declared/,
  );
  rejects(Type.Unsafe({ type: 'string', allOf: [{ type: 'integer' }] }), 'spec.allOf[0]', /type inside allOf/);
  rejects(Type.Unsafe({ type: 'string', allOf: [{ default: 'x' }] }), 'spec.allOf[0]', /default inside/);
  rejects(Type.Unsafe({ type: 'string', oneOf: [{ nullable: true }] }), 'spec.oneOf[0]', /nullable inside/);
  rejects(Type.Unsafe({ type: 'string', not: { 'x-kubernetes-list-type': 'set' } }), 'spec.not', /not structural/);
});

test('unsupported TypeBox shapes and keywords are errors', () => {
  rejects(Type.Object({ next: Type.Ref('Node') }), 'spec.next', /references .* inline the schema/);
  rejects(Type.Tuple([Type.String(), Type.Integer()]), 'spec', /tuples/);
  rejects(Type.Intersect([Type.Object({ a: Type.String() }), Type.Object({ b: Type.String() })]), 'spec', /Composite/);
  rejects(Type.Object({ at: Type.Date() }), 'spec.at', /unsupported type "Date".*format: "date-time"/);
  rejects(Type.Object({ n: Type.Null() }), 'spec.n', /unsupported type "null"/);
  rejects(Type.String({ if: { minLength: 1 } }), 'spec', /keyword "if" is not allowed/);
  rejects(Type.Integer({ minimum: Number.NaN }), 'spec', /"minimum" must be a finite number/);
  rejects(Type.String({ maxLength: -1 }), 'spec', /non-negative integer/);
});

test('annotations: $comment dropped, examples become example, defaults are deep copies', () => {
  const defaults = { a: [1, 2], b: { c: 'd' } };
  const schema = Type.Unsafe({
    type: 'object',
    $comment: 'internal',
    additionalProperties: true,
    examples: [{ a: [3] }],
    default: defaults,
  });
  const out = structuralSchema(schema);
  assert.deepEqual(out, { type: 'object', additionalProperties: true, default: defaults, example: { a: [3] } });
  assert.notEqual(out.default, defaults);
  rejects(Type.Unsafe({ type: 'string', default: () => 'x' }), 'spec.default', /function is not a JSON value/);
});

test('output keys are ordered (type first, then alphabetical) and generation is deterministic', () => {
  const make = () =>
    Type.Object({
      zeta: Type.Integer({ maximum: 3, minimum: 1, description: 'z', default: 2, format: 'int32' }),
      alpha: Type.Array(Type.String(), { maxItems: 2, description: 'a' }),
    });
  const out = structuralSchema(make());
  const zeta = (out.properties as Record<string, Record<string, unknown>>).zeta ?? {};
  assert.deepEqual(Object.keys(zeta), ['type', 'default', 'description', 'format', 'maximum', 'minimum']);
  const alpha = (out.properties as Record<string, Record<string, unknown>>).alpha ?? {};
  assert.deepEqual(Object.keys(alpha), ['type', 'description', 'items', 'maxItems']);
  assert.deepEqual(Object.keys(out.properties as object), ['zeta', 'alpha'], 'properties keep declaration order');
  assert.equal(JSON.stringify(structuralSchema(make())), JSON.stringify(structuralSchema(make())));
  assert.equal(JSON.stringify(out), JSON.stringify(structuralSchema(make())));
});

test('CrdSchemaError carries name, code and path', () => {
  try {
    structuralSchema(Type.Object({ a: Type.Object({ b: Type.Any() }) }), 'spec');
    assert.fail('expected an error');
  } catch (e) {
    assert.ok(e instanceof CrdSchemaError);
    assert.ok(e instanceof Error);
    assert.equal(e.name, 'CrdSchemaError');
    assert.equal(e.code, 'InvalidCrdSchema');
    assert.equal(e.path, 'spec.a.b');
    assert.match(e.message, /^spec\.a\.b: /);
  }
});
