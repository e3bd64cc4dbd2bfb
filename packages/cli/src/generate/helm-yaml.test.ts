import assert from 'node:assert/strict';
import { test } from 'node:test';
import { helmBlock, helmExpr, helmIf, helmText, templateDoc } from './helm-yaml.ts';
import { doc } from './manifests.ts';

test('an object without Helm nodes is written as js-yaml writes it', () => {
  const obj = {
    a: 'x: y',
    b: ['1', 2, true, null, [], {}, [['n']], { c: 'multi\nline\n' }],
    y: { namespace: 'false', empty: '' },
  };
  assert.equal(templateDoc(obj), doc(obj));
});

test('nodes: actions as scalars, blocks under their key, guarded entries and items at their indentation', () => {
  const text = templateDoc({
    spec: {
      replicas: helmExpr('.Values.replicas'),
      items: [
        { name: 'a', args: helmBlock('toYaml .Values.args') },
        helmIf('.Values.b', { name: 'b' }),
        helmText('wh.', helmExpr('.Release.Namespace'), '.svc'),
      ],
      extra: helmIf('.Values.extra', { k: 'v' }),
    },
  });
  assert.equal(
    text,
    `spec:
  replicas: {{ .Values.replicas }}
  items:
    - name: a
      args:
{{- toYaml .Values.args | nindent 8 }}
    {{- if .Values.b }}
    - name: b
    {{- end }}
    - wh.{{ .Release.Namespace }}.svc
  {{- if .Values.extra }}
  extra:
    k: v
  {{- end }}
`,
  );
});

test('a scalar of text and actions whose text needs quoting is double-quoted, the actions inside the quotes', () => {
  assert.equal(
    templateDoc({ a: helmText('x: "', helmExpr('.Release.Name'), '"') }),
    'a: "x: \\"{{ .Release.Name }}\\""\n',
  );
});

test('literal text holding {{ is written so that Helm renders it as it was, never as an action', () => {
  const obj = {
    'a{{b': 'x {{ .Values.secret }} y',
    list: ['{{', { expression: "object.spec.x == '{{'" }],
    name: helmText('{{x-', helmExpr('.Release.Name')),
  };
  const text = templateDoc(obj);
  assert.doesNotMatch(text.replaceAll('{{ "{{" }}', ''), /\{\{(?! \.Release\.Name)/, text);
  assert.match(text, /^a\{\{ "\{\{" \}\}b: x \{\{ "\{\{" \}\} \.Values\.secret }} y$/m);
  assert.match(text, /^name: "\{\{ "\{\{" \}\}x-\{\{ \.Release\.Name \}\}"$/m);
});
