/**
 * @module chaos/scenario
 * What the chaos runner does to the cluster, as a user would: a scenario is a sequence of steps, each one desired
 * state (`apply` a whole object, server-side, or `delete` one), and the runner waits for the operator to settle after
 * each. `samplesScenario` makes one from a project's samples: apply them all, edit each (a label and an annotation
 * added, as a user or a tool marks an object), then delete them all.
 *
 * Every trial runs its scenario in a namespace of its own: a namespaced object's `metadata.namespace` is replaced by
 * the trial's, so trials never see each other's objects.
 *
 * Guarantees: `checkScenario` refuses, naming the file and the step, a scenario with no name or no steps, a step that
 * is neither `apply` nor `delete`, and an object without `apiVersion`, `kind` or `metadata.name`.
 */
import { TestenvError } from '../errors.ts';
import { keyOf, type Manifest, type ObjectKey } from './objects.ts';

/** One desired state: an object applied (created or changed), or deleted. */
export type ScenarioStep = (
  | { readonly apply: Manifest; readonly delete?: undefined }
  | { readonly delete: ObjectKey; readonly apply?: undefined }
) & {
  /** What the step changes, in words, for the report (`spec.replicas: 3 → 2`). */
  readonly note?: string;
};

/** A named sequence of steps; `source` is the file it came from (for messages). */
export interface ChaosScenario {
  /** Unique among the run's scenarios: trial ids start with it. */
  readonly name: string;
  /** In order; the operator settles after each. */
  readonly steps: readonly ScenarioStep[];
  /** The file it came from, for messages (default: its name). */
  readonly source?: string;
}

/** A step in words: `apply AppService demo`, `delete AppService demo`, with its note: `(spec.replicas: 3 → 2)`. */
export function describeStep(step: ScenarioStep): string {
  const what = step.apply !== undefined ? `apply ${keyOf(step.apply)}` : `delete ${keyOf(step.delete)}`;
  return step.note ? `${what} (${step.note})` : what;
}

/** The label and annotation the samples scenario changes, as a user editing an object would. */
export const EDIT_LABEL = 'chaos.opkit.dev/edited';

/**
 * The scenario of a project's samples: apply each, then apply each with a label and annotation added (a change that
 * is not to the spec: a settled operator writes nothing for it), then delete each, last first.
 */
export function samplesScenario(samples: readonly Manifest[], source: string): ChaosScenario {
  const edited = (o: Manifest): Manifest => ({
    ...o,
    metadata: {
      ...o.metadata,
      labels: { ...o.metadata.labels, [EDIT_LABEL]: 'true' },
      annotations: { ...o.metadata.annotations, [EDIT_LABEL]: 'by the chaos samples scenario' },
    },
  });
  const key = (o: Manifest): ObjectKey => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name ?? '' });
  return {
    name: 'samples',
    source,
    steps: [
      ...samples.map((o) => ({ apply: o })),
      ...samples.map((o) => ({ apply: edited(o) })),
      ...[...samples].reverse().map((o) => ({ delete: key(o) })),
    ],
  };
}

/** Throws `ChaosInput`, naming the source and the step, unless `s` is a scenario the runner can run. */
export function checkScenario(s: unknown, source: string): asserts s is ChaosScenario {
  const fail = (why: string) => new TestenvError('ChaosInput', `${source}: ${why}`);
  if (typeof s !== 'object' || s === null) throw fail('a scenario must be an object with a name and steps');
  const { name, steps } = s as { name?: unknown; steps?: unknown };
  if (typeof name !== 'string' || name === '') throw fail('a scenario needs a name (a non-empty string)');
  if (!Array.isArray(steps) || steps.length === 0) throw fail(`scenario "${name}" needs at least one step`);
  steps.forEach((step: unknown, i) => {
    const at = `scenario "${name}", step ${i + 1}`;
    const { apply, delete: del, note } = (step ?? {}) as { apply?: unknown; delete?: unknown; note?: unknown };
    if ((apply === undefined) === (del === undefined))
      throw fail(`${at}: a step is { apply: object } or { delete: { apiVersion, kind, name } }, one of them`);
    if (note !== undefined && typeof note !== 'string') throw fail(`${at}: note, if given, is a string`);
    const o = (apply ?? del) as Record<string, unknown> | null;
    const meta = apply !== undefined ? ((o?.metadata ?? {}) as Record<string, unknown>) : o;
    for (const [field, value] of [
      ['apiVersion', o?.apiVersion],
      ['kind', o?.kind],
      [apply !== undefined ? 'metadata.name' : 'name', meta?.name],
    ] as const)
      if (typeof value !== 'string' || value === '') throw fail(`${at}: ${field} is missing`);
  });
}
