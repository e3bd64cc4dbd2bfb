/**
 * @module commands/run-owner
 * Which `opkit run` owns the cluster objects a run writes for its local webhooks — the Mutating/Validating
 * WebhookConfigurations and the conversion settings of the CRDs that convert through a webhook — and the reads and
 * writes that keep every run to what it owns.
 *
 * A run writes each such object with four annotations naming it: `opkit.dev/run-id` (random, one per run),
 * `opkit.dev/run-pid` (the opkit process), `opkit.dev/run-host` (its host name) and `opkit.dev/run-started`
 * (RFC 3339). An owner is alive when it ran on this host and its pid runs (answers signal 0 and, on Linux, is not a
 * zombie); an owner on another host cannot be checked and counts as alive.
 *
 * Guarantees:
 * - `check` only reads. It refuses — a `CliError` (`OwnedElsewhere`) naming each object, the other run (pid, host,
 *   start, id) and what to do — when an object belongs to another run that is alive, and when a webhook
 *   configuration exists that no run wrote (`opkit deploy`, helm or kubectl did: a local run never replaces a
 *   deployment's webhooks). A CRD no run owns, or one whose run has ended, may be taken over.
 * - `claim` writes under an optimistic-concurrency precondition only: create when absent (AlreadyExists: read it
 *   again and decide again), server-side apply with the resourceVersion it read when taking one over (Conflict: the
 *   same). A run that loses such a race to another live run stops with the same refusal, after releasing what it
 *   had claimed. CRDs are waited for until Established.
 * - `release` (at the end of the run) deletes the configurations, and removes the annotations from the CRDs (their
 *   conversion stays as the run pointed it), only while they still carry this run's id, each under a resourceVersion
 *   precondition; an object another run has taken over, or that is gone, is left and named.
 */
import { hostname } from 'node:os';
import { isAlreadyExists, isApiError, type KubeObject } from '@opkit/runtime';
import { type Client, type Kind, resource } from '@opkit/runtime/client';
import { isProcessAlive } from '@opkit/testenv';
import { CliError } from '../errors.ts';

export const RUN_ID = 'opkit.dev/run-id';
export const RUN_PID = 'opkit.dev/run-pid';
export const RUN_HOST = 'opkit.dev/run-host';
export const RUN_STARTED = 'opkit.dev/run-started';
const RUN_ANNOTATIONS = [RUN_ID, RUN_PID, RUN_HOST, RUN_STARTED] as const;

export interface RunOwner {
  readonly id: string;
  readonly pid: number;
  readonly host: string;
  readonly started: string;
}

/** Where a run looks at other runs from: its host name, and whether a pid of this host is alive. */
export interface Vantage {
  readonly host: string;
  alive(pid: number): boolean;
}

/** This machine: a pid is alive as testenv's `isProcessAlive` says (a zombie, killed but not reaped, has ended). */
export const thisHost: Vantage = { host: hostname(), alive: isProcessAlive };

export function newRunOwner(id: string, now: Date, vantage: Vantage = thisHost): RunOwner {
  return { id, pid: process.pid, host: vantage.host, started: now.toISOString() };
}

/** The run an object names, or undefined when it carries no run id. */
export function ownerOf(obj: KubeObject | undefined): RunOwner | undefined {
  const a = obj?.metadata.annotations;
  const id = a?.[RUN_ID];
  if (!id) return undefined;
  return { id, pid: Number(a[RUN_PID] ?? 0), host: a[RUN_HOST] ?? '', started: a[RUN_STARTED] ?? '' };
}

/** `obj` with `owner`'s annotations. */
export function withOwner(obj: KubeObject, owner: RunOwner): KubeObject {
  return {
    ...obj,
    metadata: {
      ...obj.metadata,
      annotations: {
        ...obj.metadata.annotations,
        [RUN_ID]: owner.id,
        [RUN_PID]: String(owner.pid),
        [RUN_HOST]: owner.host,
        [RUN_STARTED]: owner.started,
      },
    },
  };
}

export type Liveness = 'alive' | 'ended' | 'unknown';

export function liveness(owner: RunOwner, vantage: Vantage): Liveness {
  if (owner.host !== vantage.host) return 'unknown';
  return owner.pid > 0 && vantage.alive(owner.pid) ? 'alive' : 'ended';
}

/** Why a run may not write an object, and what the user can do about it. */
export interface Refusal {
  /** The object, e.g. `ValidatingWebhookConfiguration x` or `the conversion webhook of CustomResourceDefinition y`. */
  readonly subject: string;
  /** Follows the subject: `belongs to …` / `exists and …`. */
  readonly because: string;
  readonly remedy: string;
}

export type Decision =
  | { readonly action: 'create' }
  | { readonly action: 'replace'; readonly resourceVersion: string; readonly previous: RunOwner | undefined }
  | ({ readonly action: 'refuse' } & Refusal);

const isCrd = (obj: KubeObject) => obj.kind === 'CustomResourceDefinition';

function subject(obj: KubeObject): string {
  return isCrd(obj)
    ? `the conversion webhook of CustomResourceDefinition ${obj.metadata.name}`
    : `${obj.kind} ${obj.metadata.name}`;
}

function removal(objs: readonly string[]): string {
  return objs
    .map((s) => {
      const crd = /^the conversion webhook of CustomResourceDefinition (.+)$/.exec(s)?.[1];
      if (crd) {
        return `kubectl annotate customresourcedefinition ${crd} ${RUN_ANNOTATIONS.map((a) => `${a}-`).join(' ')}`;
      }
      const [kind, name] = s.split(' ');
      return `kubectl delete ${(kind ?? '').toLowerCase()} ${name}`;
    })
    .join('; ');
}

/** What a run (`me`) may do with `desired`, given the object the cluster has (`existing`, undefined when absent). */
export function decide(
  desired: KubeObject,
  existing: KubeObject | undefined,
  me: RunOwner,
  vantage: Vantage,
): Decision {
  if (!existing) return { action: 'create' };
  const resourceVersion = existing.metadata.resourceVersion ?? '';
  const owner = ownerOf(existing);
  if (!owner) {
    if (isCrd(desired)) return { action: 'replace', resourceVersion, previous: undefined };
    return {
      action: 'refuse',
      subject: subject(desired),
      because: 'exists and no opkit run wrote it (opkit deploy, helm or kubectl did)',
      remedy:
        'a local run never replaces a deployment’s webhooks: remove the deployment first (opkit undeploy, or REMOVE), then run again',
    };
  }
  if (owner.id === me.id) return { action: 'replace', resourceVersion, previous: owner };
  const state = liveness(owner, vantage);
  if (state === 'ended') return { action: 'replace', resourceVersion, previous: owner };
  if (state === 'alive') {
    return {
      action: 'refuse',
      subject: subject(desired),
      because:
        `belongs to another opkit run (pid ${owner.pid} on this machine, started ${owner.started}, run ${owner.id}), ` +
        'which is still running',
      remedy: `stop that run first (Ctrl-C where it runs, or kill ${owner.pid}), then run again`,
    };
  }
  return {
    action: 'refuse',
    subject: subject(desired),
    because:
      `belongs to an opkit run on ${owner.host || 'an unnamed host'} (pid ${owner.pid}, started ${owner.started}, ` +
      `run ${owner.id}), which cannot be checked from here`,
    remedy: 'stop that run first; if it ended without cleaning up, REMOVE, then run again',
  };
}

/** One line for `refusals`: the objects with the same reason together, then `tail`. */
export function refusalMessage(refusals: readonly Refusal[], tail = 'nothing was written to the cluster'): string {
  const groups = new Map<string, { because: string; remedy: string; subjects: string[] }>();
  for (const r of refusals) {
    const key = `${r.because}\n${r.remedy}`;
    const g = groups.get(key) ?? { because: r.because, remedy: r.remedy, subjects: [] };
    g.subjects.push(r.subject);
    groups.set(key, g);
  }
  const parts = [...groups.values()].map((g) => {
    const because =
      g.subjects.length > 1 ? g.because.replace(/^belongs /, 'belong ').replace(/^exists /, 'exist ') : g.because;
    const them = g.subjects.length > 1 ? 'no opkit run wrote them' : 'no opkit run wrote it';
    return `${g.subjects.join(' and ')} ${because.replace('no opkit run wrote it', them)}: ${g.remedy.replace('REMOVE', removal(g.subjects))}`;
  });
  return `${parts.join('; ')}; ${tail}`;
}

const CRDS = resource({
  group: 'apiextensions.k8s.io',
  version: 'v1',
  kind: 'CustomResourceDefinition',
  plural: 'customresourcedefinitions',
  namespaced: false,
});

/** The cluster-scoped resource of a CRD or a webhook configuration. */
export function claimedType(obj: KubeObject): Kind {
  if (isCrd(obj)) return CRDS;
  const kind = obj.kind ?? '';
  return resource({
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind,
    plural: `${kind.toLowerCase()}s`,
    namespaced: false,
  });
}

/** What `release` did, as lines to print. */
export interface Released {
  readonly removed: readonly string[];
  readonly left: readonly string[];
}

const ATTEMPTS = 5;

export class RunClaims {
  readonly #client: Client;
  readonly #owner: RunOwner;
  readonly #vantage: Vantage;
  readonly #fieldManager: string;
  /** What this run wrote, in order. */
  readonly #claimed: KubeObject[] = [];

  constructor(client: Client, owner: RunOwner, options: { vantage?: Vantage; fieldManager?: string } = {}) {
    this.#client = client;
    this.#owner = owner;
    this.#vantage = options.vantage ?? thisHost;
    this.#fieldManager = options.fieldManager ?? 'opkit';
  }

  async #read(obj: KubeObject): Promise<KubeObject | undefined> {
    try {
      return await this.#client.get(claimedType(obj), { name: obj.metadata.name ?? '' });
    } catch (err) {
      if (isApiError(err, 'NotFound')) return undefined;
      throw err;
    }
  }

  /** Reads every object and refuses, naming each one this run may not write; writes nothing. */
  async check(objects: readonly KubeObject[]): Promise<void> {
    const refusals: Refusal[] = [];
    for (const obj of objects) {
      const d = decide(obj, await this.#read(obj), this.#owner, this.#vantage);
      if (d.action === 'refuse') refusals.push(d);
    }
    if (refusals.length > 0) throw new CliError('OwnedElsewhere', refusalMessage(refusals));
  }

  /** Writes every object as this run's (see the module's guarantees); on a refusal, releases what it wrote. */
  async claim(objects: readonly KubeObject[]): Promise<void> {
    try {
      for (const obj of objects) await this.#claimOne(withOwner(obj, this.#owner));
    } catch (err) {
      const written = this.#claimed.map((o) => `${o.kind} ${o.metadata.name}`);
      const released = await this.release().then(
        (r) => (r.removed.length > 0 ? `removed again what this run had written (${r.removed.join(', ')})` : ''),
        (e: unknown) =>
          `removing what this run had written (${written.join(', ')}) failed too: ${(e as Error).message.split('\n')[0]}`,
      );
      const what = released || 'this run wrote none of them';
      if (err instanceof CliError) throw new CliError(err.code, `${err.message}; ${what}`, { cause: err.cause });
      throw new CliError(
        'ClusterFailed',
        `writing this run's webhooks failed: ${(err as Error).message.split('\n')[0]}; ${what}`,
        { cause: err },
      );
    }
  }

  async #claimOne(obj: KubeObject): Promise<void> {
    const r = claimedType(obj);
    for (let attempt = 1; ; attempt++) {
      const d = decide(obj, await this.#read(obj), this.#owner, this.#vantage);
      if (d.action === 'refuse') {
        throw new CliError('OwnedElsewhere', refusalMessage([d], 'that run wrote it while this one was starting'));
      }
      try {
        if (d.action === 'create') {
          await this.#client.create(r, obj, { fieldManager: this.#fieldManager });
        } else {
          const body = { ...obj, metadata: { ...obj.metadata, resourceVersion: d.resourceVersion } };
          await this.#client.apply(r, body, { fieldManager: this.#fieldManager, force: true });
        }
      } catch (err) {
        if ((isAlreadyExists(err) || isApiError(err, 'Conflict')) && attempt < ATTEMPTS) continue;
        throw err;
      }
      this.#claimed.push(obj);
      if (isCrd(obj)) await this.#established(obj.metadata.name ?? '');
      return;
    }
  }

  async #established(name: string): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const crd = (await this.#client.get(CRDS, { name })) as KubeObject & {
        status?: { conditions?: { type: string; status: string }[] };
      };
      if (crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) return;
      if (Date.now() > deadline) {
        throw new CliError('Timeout', `the CustomResourceDefinition ${name} did not become Established within 60 s`);
      }
      await new Promise((res) => setTimeout(res, 200));
    }
  }

  /** Removes what still carries this run's id (see the module's guarantees), last written first. */
  async release(): Promise<Released> {
    const removed: string[] = [];
    const left: string[] = [];
    for (const obj of [...this.#claimed].reverse()) {
      const outcome = await this.#releaseOne(obj);
      if (outcome === 'removed') removed.push(`${obj.kind} ${obj.metadata.name}`);
      else if (outcome !== 'gone') left.push(outcome);
    }
    this.#claimed.length = 0;
    return { removed, left };
  }

  async #releaseOne(obj: KubeObject): Promise<'removed' | 'gone' | string> {
    const r = claimedType(obj);
    const name = obj.metadata.name ?? '';
    for (let attempt = 1; ; attempt++) {
      const current = await this.#read(obj);
      if (!current) return 'gone';
      const owner = ownerOf(current);
      if (owner?.id !== this.#owner.id) {
        return `left ${obj.kind} ${name}: ${owner ? `it now belongs to the opkit run ${owner.id} (pid ${owner.pid} on ${owner.host})` : 'no opkit run owns it now'}`;
      }
      const resourceVersion = current.metadata.resourceVersion ?? '';
      try {
        if (isCrd(obj)) {
          // a merge patch that names the resourceVersion is applied only to that version (else Conflict)
          await this.#client.patch(
            r,
            { name },
            {
              metadata: { resourceVersion, annotations: Object.fromEntries(RUN_ANNOTATIONS.map((a) => [a, null])) },
            },
          );
        } else {
          await this.#client.delete(r, { name }, { preconditions: { resourceVersion } });
        }
        return 'removed';
      } catch (err) {
        if (isApiError(err, 'NotFound')) return 'gone';
        if (isApiError(err, 'Conflict') && attempt < ATTEMPTS) continue;
        throw err;
      }
    }
  }
}
