/**
 * @module generate/policies
 * A project's admission policies: `src/policies.ts` exports `policies`, an array of `definePolicy(…)` (a
 * ValidatingAdmissionPolicy) and `defineMutatingPolicy(…)` (a MutatingAdmissionPolicy), from `@opkit/runtime/policy`.
 * `opkit generate` writes each policy and its binding into `config/policies/<name>.yaml`, into `dist/install.yaml` and
 * into the Helm chart (`templates/policies.yaml`).
 *
 * Guarantees: no file at `src/policies.ts`, no policy and nothing written; a file that does not export an array of
 * policies is a `Usage` error naming the file and what to export. No RBAC is generated for them: the apiserver
 * evaluates a policy and reads its params with its own identity, and the operator does not touch them.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { KubeObject } from '@opkit/runtime';
import type { MutatingPolicy, Policy } from '@opkit/runtime/policy';
import { CliError } from '../errors.ts';

export const POLICIES_FILE = 'src/policies.ts';

/** The kinds of the objects a policy makes. */
export const POLICY_KINDS: ReadonlySet<string | undefined> = new Set([
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'MutatingAdmissionPolicy',
  'MutatingAdmissionPolicyBinding',
]);

/** A policy of either kind, as `definePolicy` and `defineMutatingPolicy` make them. */
export type AnyPolicy = Policy | MutatingPolicy;

const isPolicy = (v: unknown): v is AnyPolicy =>
  typeof v === 'object' && v !== null && 'manifests' in v && typeof v.manifests === 'function' && 'definition' in v;

/** The policies `src/policies.ts` exports, or none when there is no such file. */
export async function loadPolicies(dir: string): Promise<readonly AnyPolicy[]> {
  const file = join(dir, POLICIES_FILE);
  if (!existsSync(file)) return [];
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (err) {
    throw new CliError('Usage', `cannot load ${file}: ${(err as Error).message.split('\n')[0]}`, { cause: err });
  }
  const policies = mod.policies;
  if (!Array.isArray(policies) || !policies.every(isPolicy)) {
    throw new CliError(
      'Usage',
      `${file} must export policies, an array of definePolicy({ … }) and defineMutatingPolicy({ … }) (from @opkit/runtime/policy), e.g. export const policies = [definePolicy({ … })]`,
    );
  }
  const names = new Set<string>();
  for (const p of policies) {
    if (names.has(p.definition.name))
      throw new CliError(
        'Usage',
        `${file}: two policies are named ${JSON.stringify(p.definition.name)} (each is written to config/policies/<name>.yaml, whatever its kind): rename one`,
      );
    names.add(p.definition.name);
  }
  return policies;
}

/** `config/policies/<name>.yaml` for a policy. */
export const policyFile = (policy: AnyPolicy) => `config/policies/${policy.definition.name}.yaml`;

/** Every policy's objects: the policy, then its binding. */
export function policyObjects(policies: readonly AnyPolicy[]): KubeObject[] {
  return policies.flatMap((p) => p.manifests());
}
