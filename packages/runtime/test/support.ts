/**
 * @module test/support
 * Shared set-up of the runtime's integration tests: a control plane, clients for it, a test CRD (`Widget`, with status
 * and scale subresources), a logger that records entries, and polling.
 */

import { after, before } from 'node:test';
import { type Environment, start, waitFor } from '@opkit/testenv';
import { CustomResourceDefinitions } from '../src/client/builtins.ts';
import { Client, type ConnectionConfig, type Kind, loadConfig, resource } from '../src/client/index.ts';
import type { KubeObject } from '../src/index.ts';
import type { LogFields, Logger } from '../src/manager/index.ts';

export interface Widget extends KubeObject {
  spec?: { replicas?: number; color?: string };
  status?: { replicas?: number; selector?: string; phase?: string };
}

export const Widgets = resource<Widget>({
  group: 'test.opkit.dev',
  version: 'v1',
  kind: 'Widget',
  plural: 'widgets',
  namespaced: true,
});

export async function startEnv(nodes = 1): Promise<{ env: Environment; client: Client; config: ConnectionConfig }> {
  const env = await start({ nodes, log: () => {} });
  const config = await loadConfig({ path: env.kubeconfigPath });
  return { env, client: new Client(config, { name: 'runtime-tests' }), config };
}

/** A client that reaches the apiserver at another address (e.g. through a FaultProxy). */
export async function clientVia(env: Environment, server: string): Promise<Client> {
  const config = await loadConfig({ path: env.kubeconfigPath });
  return new Client({ ...config, server }, { name: 'runtime-tests-proxied' });
}

export async function installWidgetCrd(client: Client): Promise<void> {
  await client.create(CustomResourceDefinitions, {
    metadata: { name: 'widgets.test.opkit.dev' },
    spec: {
      group: 'test.opkit.dev',
      names: { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          subresources: {
            status: {},
            scale: {
              specReplicasPath: '.spec.replicas',
              statusReplicasPath: '.status.replicas',
              labelSelectorPath: '.status.selector',
            },
          },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: {
                  type: 'object',
                  properties: { replicas: { type: 'integer', minimum: 0 }, color: { type: 'string', maxLength: 20 } },
                },
                status: {
                  type: 'object',
                  properties: {
                    replicas: { type: 'integer' },
                    selector: { type: 'string' },
                    phase: { type: 'string' },
                    conditions: {
                      type: 'array',
                      items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                    },
                  },
                },
              },
            },
          },
        },
      ],
    },
  });
  await waitServed(client, Widgets);
}

/** Resolves once the apiserver serves `kind` (its CRD established): a list of it in `namespace` succeeds. */
export async function waitServed(client: Client, kind: Kind, namespace = 'default'): Promise<void> {
  await waitFor(`${kind.kind} to be served`, async () => {
    try {
      await client.list(kind, { namespace });
      return true;
    } catch {
      return false;
    }
  });
}

export { waitFor };

/**
 * For one `describe` block: a control plane with the Widget CRD, started before its tests and stopped after them,
 * with `stopper()` for signals that are aborted at the end (controllers the tests leave running).
 */
export function widgetControlPlane(): {
  readonly env: Environment;
  readonly client: Client;
  stopper(): AbortController;
} {
  let started: { env: Environment; client: Client } | undefined;
  const stops: AbortController[] = [];
  before(async () => {
    const { env, client } = await startEnv();
    started = { env, client };
    await installWidgetCrd(client);
  });
  after(async () => {
    for (const s of stops) s.abort();
    started?.client.close();
    await started?.env.stop();
  });
  const get = () => {
    if (!started) throw new Error('the control plane is used before its before() hook ran');
    return started;
  };
  return {
    get env() {
      return get().env;
    },
    get client() {
      return get().client;
    },
    stopper() {
      const c = new AbortController();
      stops.push(c);
      return c;
    },
  };
}

export interface LogEntry {
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly message: string;
  readonly fields: LogFields;
  /** When it was logged (`performance.now()`). */
  readonly at: number;
}

/** A Logger that keeps every entry (with the bindings of its children) for assertions. */
export function recordingLogger(entries: LogEntry[] = [], bindings: LogFields = {}): Logger & { entries: LogEntry[] } {
  const at =
    (level: LogEntry['level']) =>
    (fields: LogFields, message: string): void => {
      entries.push({ level, message, fields: { ...bindings, ...fields }, at: performance.now() });
    };
  return {
    entries,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (more) => recordingLogger(entries, { ...bindings, ...more }),
  };
}
