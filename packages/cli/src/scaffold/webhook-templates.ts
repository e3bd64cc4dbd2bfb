/**
 * @module scaffold/webhook-templates
 * What `opkit create webhook` writes: the handlers of one kind (`src/webhooks/<kind>.ts`), the project's webhook list
 * (`src/webhooks.ts`, which `opkit generate` reads and `main.ts` serves), and the edits that register a kind there
 * and the webhooks in `main.ts` — each at its marker, each only once.
 */
import { CliError } from '../errors.ts';
import { kindsName, lower } from '../project/names.ts';
import type { ApiEntry } from '../project/project.ts';
import { MARK_CONTROLLERS, MARK_IMPORTS, YOURS } from './templates.ts';

export const MARK_WEBHOOK_IMPORTS = '// +opkit:scaffold:webhook-imports';
export const MARK_WEBHOOKS = '// +opkit:scaffold:webhooks';
export const MARK_CONVERSIONS = '// +opkit:scaffold:conversions';

export interface WebhookKinds {
  readonly defaulting: boolean;
  readonly validation: boolean;
}

/** src/webhooks/<kind>.ts: a working defaulter and validator for the kind, for the user to extend. */
export function kindWebhooksFile(api: ApiEntry, w: WebhookKinds): string {
  const k = api.kind;
  const lk = lower(k);
  const runtime = [
    ...(w.defaulting ? ['defaulter'] : []),
    ...(w.validation ? ['fieldErrors', 'type ValidationResult', 'validator'] : []),
    'type WebhookDefinition',
  ];
  const defs: string[] = [];
  if (w.defaulting)
    defs.push(`    { type: 'mutating', resource: ${kindsName(k)}, handler: defaulter(${kindsName(k)}, default${k}) },`);
  if (w.validation) {
    defs.push(
      [
        '    {',
        "      type: 'validating',",
        `      resource: ${kindsName(k)},`,
        '      // covers the operations it has checks for: CREATE and UPDATE. A `delete: (old) => …` check would make it',
        '      // cover DELETE too, and then, with failurePolicy Fail, deletes wait for the operator to be up.',
        `      handler: validator(${kindsName(k)}, { create: validate${k}, update: (obj) => validate${k}(obj) }),`,
        '    },',
      ].join('\n'),
    );
  }
  return `${YOURS}
/**
 * @module webhooks/${lk}
 * The admission webhooks of ${k} (${api.group}/${api.version}), served by the manager's webhook server.${
   w.defaulting
     ? `
 * - default${k}: sets what a schema default cannot (values computed from other fields or objects). It edits a copy;
 *   opkit answers with the JSONPatch of the difference.`
     : ''
 }${
   w.validation
     ? `
 * - validate${k}: rules CEL cannot express (other objects, lookups, warnings computed by code); errors name the
 *   field (kubectl prints \`spec.x: Invalid value: …\`), warnings are printed by kubectl either way.`
     : ''
 }
 */
import { ${runtime.join(', ')} } from '@opkit/runtime/webhook';
import { type ${k}, ${kindsName(k)} } from '../api/${api.version}/${lk}.ts';
${
  w.defaulting
    ? `
/** Labels every ${k} with its kind, so its objects can be selected by it. */
export function default${k}(obj: ${k}): void {
  obj.metadata.labels = { 'app.kubernetes.io/name': '${lk}', ...obj.metadata.labels };
}
`
    : ''
}${
  w.validation
    ? `
/** A ${k}'s name becomes a label value of what it owns: at most 63 characters. */
export function validate${k}(obj: ${k}): ValidationResult {
  const name = obj.metadata.name ?? '';
  return {
    errors: name.length > 63 ? [fieldErrors.tooLong('metadata.name', name, 63)] : [],
  };
}
`
    : ''
}
export function ${lk}Webhooks(): WebhookDefinition[] {
  return [
${defs.join('\n')}
  ];
}
`;
}

/**
 * test/webhooks/<kind>.test.ts: the kind's webhooks through a real local control plane (the test manager serves
 * them, the apiserver calls them): the scaffolded defaulter's label and the validator's refusal, as a user sees them.
 */
export function kindWebhooksTestFile(projectName: string, api: ApiEntry, w: WebhookKinds, conversion: boolean): string {
  const k = api.kind;
  const lk = lower(k);
  const ns = api.namespaced ? "namespace: 'default', " : '';
  const tests: string[] = [];
  if (w.defaulting) {
    tests.push(`
test('a new ${k} is labelled by the defaulting webhook', async () => {
  const op = await startTestManager(env, options);
  try {
    const created = await op.client.create(${kindsName(k)}, { metadata: { ${ns}name: 'defaulted' }, spec: {} });
    assert.equal(created.metadata.labels?.['app.kubernetes.io/name'], '${lk}');
  } finally {
    await op.stop(); // always: it removes the webhook configurations, then stops the manager
  }
});
`);
  }
  if (w.validation) {
    tests.push(`
test('a ${k} whose name is too long is refused by the validating webhook, naming the field', async () => {
  const op = await startTestManager(env, options);
  try {
    const refused = await op.client
      .create(${kindsName(k)}, { metadata: { ${ns}name: 'x'.repeat(64) }, spec: {} })
      .catch((err: unknown) => err);
    assert.ok(refused instanceof ApiError, \`expected a refusal, got \${String(refused)}\`);
    assert.equal(refused.code, 'Invalid');
    assert.deepEqual(
      refused.causes.map((c) => c.field),
      ['metadata.name'],
    );
  } finally {
    await op.stop();
  }
});
`);
  }
  return `${YOURS}
// The ${k} webhooks on a real local control plane (@opkit/testenv, shared by the run's test files): the test manager
// serves them on loopback with a certificate of its own, the apiserver calls them, so a write shows the defaulted
// object or the refusal (an ApiError with the webhook's field causes) as kubectl would.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ApiError } from '@opkit/runtime';
import { startTestManager } from '@opkit/runtime/testing';
import { type SharedEnvironment, sharedEnvironment } from '@opkit/testenv';
import { ${kindsName(k)} } from '../../src/api/${api.version}/${lk}.ts';
import { permissions } from '../../src/webhooks.ts';
import { ${lk}Webhooks } from '../../src/webhooks/${lk}.ts';

let env: SharedEnvironment;
before(async () => {
  env = await sharedEnvironment({ nodes: 0, log: () => {} }); // npm test's (test/setup.ts), or this file's own
});
after(async () => {
  await env?.release(); // in a hook, so a failed test or a rejected op.stop() cannot skip it
});

const options = {
  name: '${projectName}',
  kinds: [${kindsName(k)}],
  permissions,
  setup: () => {},
  webhooks: { admission: ${lk}Webhooks()${conversion ? `, conversion: [${kindsName(k)}]` : ''} },
};
${tests.join('')}`;
}

/** src/webhooks.ts for a project that has none yet. */
export function projectWebhooksFile(): string {
  return `${YOURS}
/**
 * @module webhooks
 * The project's webhooks: \`webhooks()\` lists every admission webhook, \`conversions\` the kinds with several
 * versions served at /convert, \`permissions\` what the handlers read. \`opkit generate\` writes the webhook
 * configurations, the Service, the cert-manager Certificate and the RBAC from them; \`setupWebhooks\` serves them.
 */
import type { Manager, Permission } from '@opkit/runtime';
import { serveWebhooks, type WebhookDefinition } from '@opkit/runtime/webhook';
${MARK_WEBHOOK_IMPORTS}

/** Kinds whose versions are converted at /convert (kinds made with defineKind({ versions, storage, conversions })). */
export const conversions = [
  ${MARK_CONVERSIONS}
];

/** What the webhook handlers read or write (added to the operator's RBAC). */
export const permissions: readonly Permission[] = [];

export function webhooks(): WebhookDefinition[] {
  return [
    ${MARK_WEBHOOKS}
  ];
}

/** Serves every webhook on the manager's webhook server. */
export function setupWebhooks(mgr: Manager): void {
  serveWebhooks(mgr.webhookServer, webhooks(), conversions);
}
`;
}

function insertAt(text: string, mark: string, line: string, file: string): string {
  if (text.includes(line.trim())) return text;
  const lines = text.split('\n');
  const i = lines.findIndex((l) => l.trim() === mark);
  if (i < 0) throw new CliError('ScaffoldMarkerMissing', `${file}: the marker "${mark}" is missing`);
  const indent = /^\s*/.exec(lines[i] ?? '')?.[0] ?? '';
  lines.splice(i, 0, `${indent}${line.trim()}`);
  return lines.join('\n');
}

/** src/webhooks.ts with the kind's webhooks (and its conversion) registered at the markers. */
export function registerKindWebhooks(text: string, api: ApiEntry, w: WebhookKinds, conversion: boolean): string {
  const k = api.kind;
  const lk = lower(k);
  let out = text;
  if (w.defaulting || w.validation) {
    out = insertAt(
      out,
      MARK_WEBHOOK_IMPORTS,
      `import { ${lk}Webhooks } from './webhooks/${lk}.ts';`,
      'src/webhooks.ts',
    );
    out = insertAt(out, MARK_WEBHOOKS, `...${lk}Webhooks(),`, 'src/webhooks.ts');
  }
  if (conversion) {
    out = insertAt(
      out,
      MARK_WEBHOOK_IMPORTS,
      `import { ${kindsName(k)} } from './api/${api.version}/${lk}.ts';`,
      'src/webhooks.ts',
    );
    out = insertAt(out, MARK_CONVERSIONS, `${kindsName(k)},`, 'src/webhooks.ts');
  }
  return out;
}

/** main.ts serving the webhooks (unless ENABLE_WEBHOOKS=false, as kubebuilder's `make run`). */
export function registerWebhooksInMain(main: string): string {
  const importLine = `import { setupWebhooks } from './webhooks.ts';`;
  if (main.includes(importLine)) return main;
  let out = insertAt(main, MARK_IMPORTS, importLine, 'src/main.ts');
  const lines = out.split('\n');
  const at = lines.findIndex((l) => l.trim() === MARK_CONTROLLERS);
  if (at < 0) throw new CliError('ScaffoldMarkerMissing', `src/main.ts: the marker "${MARK_CONTROLLERS}" is missing`);
  const indent = /^\s*/.exec(lines[at] ?? '')?.[0] ?? '';
  lines.splice(at + 1, 0, `${indent}if (process.env.ENABLE_WEBHOOKS !== 'false') setupWebhooks(mgr);`);
  out = lines.join('\n');
  return out;
}
