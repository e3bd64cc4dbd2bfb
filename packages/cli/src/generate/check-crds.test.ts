import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describe as describeProblem } from './check-crds.ts';

const SCHEMA = 'spec.versions[0].schema.openAPIV3Schema';

/** The apiserver's refusal of the `fieldPath` of a rule on `schemaPath` (`.` for the object). */
const badFieldPath = (schemaPath: string, rule: string) =>
  describeProblem({
    field: `${SCHEMA}${schemaPath === '.' ? '' : `.properties[${schemaPath}]`}.x-kubernetes-validations[0].fieldPath`,
    reason: 'FieldValueInvalid',
    detail: 'must be a valid path',
    version: 'v1',
    schemaPath,
    rule,
    ruleField: 'fieldPath',
  });

test('a fieldPath the apiserver refuses: generate says what it allows on that node and how to word the message', () => {
  const onObject = badFieldPath('.', "self.metadata.labels['tier'] != ''");
  assert.equal(
    onObject,
    "version v1, the object, rule `self.metadata.labels['tier'] != ''` (its fieldPath): must be a valid path\n" +
      '    fieldPath is relative to the node the rule is on (the object) and must name a field of the object its ' +
      'schema declares, such as `.spec.replicas` or `.status.phase`; of metadata only `.metadata.name` and ' +
      '`.metadata.generateName`, the fields a CRD may declare in it.\n' +
      "    For another field, leave fieldPath out and name the field in the message (message: 'metadata.labels must " +
      "…'): the apiserver then reports the error on the object as a whole",
  );
  const nested = badFieldPath('spec', 'self.replicas > 0');
  assert.match(nested, /\(spec\) and must name a field its schema declares below `spec`, such as `\.replicas`/);
  assert.match(nested, /reports the error on spec$/);
  // other problems of a rule read as the apiserver's words alone
  const typo = describeProblem({
    field: `${SCHEMA}.properties[spec].x-kubernetes-validations[0].rule`,
    reason: 'FieldValueInvalid',
    detail: "compilation failed: ERROR: <input>:1:6: undefined field 'replicass'",
    version: 'v1',
    schemaPath: 'spec',
    rule: 'self.replicass > 0',
  });
  assert.equal(
    typo,
    "version v1, schema spec, rule `self.replicass > 0`: compilation failed: ERROR: <input>:1:6: undefined field 'replicass'",
  );
});
