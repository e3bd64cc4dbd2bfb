/**
 * @module helpers
 * Small helpers for the integration tests: polling with a deadline, pid checks, and a CRD to install.
 */

/** True when the pid runs (a zombie counts as ended). */
export { isProcessAlive as alive } from '../src/process.ts';
export { waitFor } from '../src/wait.ts';

export const quiet = (): void => {};

/** A namespaced CRD `<plural>.<group>` whose objects take any field, serving `served` (the first one stored). */
export function anyFieldsCrd(group: string, plural: string, served: readonly string[] = ['v1']) {
  const kind = `${plural[0]?.toUpperCase()}${plural.slice(1, -1)}`;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural, singular: plural.slice(0, -1), kind, listKind: `${kind}List` },
      versions: served.map((name, i) => ({
        name,
        served: true,
        storage: i === 0,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      })),
    },
  };
}
