/**
 * @module chaos/members
 * The member clusters of a fleet operator under chaos (docs/multicluster.md): N control planes of their own
 * (`member-1`, …), each with the project's CRDs and the members' RBAC (`config/fleet/member-rbac.yaml`, as
 * `opkit generate` writes it), which every replica reaches as that ServiceAccount through a fault proxy of its own per
 * member. Each replica gets a folder of its members' kubeconfigs (`<member>.kubeconfig`), named to it by
 * `FLEET_KUBECONFIG_DIR`, for a `kubeconfigFolder` provider to read. A member leaves the fleet when its file is removed
 * from every folder, and comes back when the file is written again.
 *
 * Guarantees: a write a replica made in a member is recorded with the member's name before the replica has its
 * answer; a file appears whole (written aside, then renamed); a start that fails part-way stops what it started;
 * `stop()` ends the proxies and the members' control planes.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { CrdInput } from '../crds.ts';
import { type Environment, start } from '../environment.ts';
import { type Kubeconfig, makeKubeconfig, writeKubeconfig } from '../kubeconfig.ts';
import { ApiFaultProxy, type ProxyAnswer } from './api-proxy.ts';
import { replicaName } from './leases.ts';
import { type Manifest, Objects } from './objects.ts';
import { installRbac } from './rbac.ts';
import type { RequestInfo } from './request-info.ts';

/** One member cluster of the system. */
export interface ChaosMember {
  /** `member-1`, … : its file's name in the folders, and the cluster's name in the fleet. */
  readonly name: string;
  readonly env: Environment;
  /** Objects in it, as the user (the harness) reads and writes them. */
  readonly objects: Objects;
  /** One per replica, in the replicas' order. */
  readonly proxies: readonly ApiFaultProxy[];
  /** The user the replicas are there (the members' ServiceAccount). */
  readonly user: string;
}

/** What `ChaosMembers.start` makes. */
export interface MemberOptions {
  /** How many members (1 or more). */
  readonly count: number;
  /** The project's CRDs, installed in each member too. */
  readonly crds: readonly CrdInput[];
  /** The members' ServiceAccount, roles and bindings (`config/fleet/member-rbac.yaml`). */
  readonly rbac: readonly Manifest[];
  /** How many replicas: a proxy and a folder each. */
  readonly replicas: number;
  /** Where the folders go. */
  readonly dir: string;
  /** The serving certificate of the proxies (the replicas trust its CA). */
  readonly serving: { readonly caPem: string; readonly certPem: string; readonly keyPem: string };
  /** Called for each request of replica `replica` to member `member` before it is forwarded. */
  answer(replica: number, info: RequestInfo, member: string): ProxyAnswer | undefined;
  /** Called once the member's apiserver applied a write of replica `replica`, before the replica has the answer. */
  record(replica: number, info: RequestInfo, member: string): void | Promise<void>;
  /** Called when the member's authorizer refused a request of replica `replica` (a permission its RBAC lacks). */
  denied(replica: number, info: RequestInfo, message: string, member: string): void;
  readonly log?: (line: string) => void;
}

/** The member clusters and the replicas' folders of their kubeconfigs; see the module comment. */
export class ChaosMembers {
  readonly members: readonly ChaosMember[];
  /** Each replica's folder (`FLEET_KUBECONFIG_DIR`). */
  readonly folders: readonly string[];
  /** Each member's kubeconfig, per replica. */
  readonly #files: ReadonlyMap<string, readonly Kubeconfig[]>;
  /** The ServiceAccount tokens the replicas hold in the members: never to be printed. */
  readonly tokens: readonly string[];
  /** The members taken out of the folders now. */
  readonly #away = new Set<string>();
  /** The folder writes under way (`back()` waits for them). */
  readonly #writing = new Set<Promise<void>>();

  private constructor(
    members: readonly ChaosMember[],
    folders: readonly string[],
    files: ReadonlyMap<string, readonly Kubeconfig[]>,
    tokens: readonly string[],
  ) {
    this.members = members;
    this.folders = folders;
    this.#files = files;
    this.tokens = tokens;
  }

  /** Starts the members, installs their CRDs and RBAC, and writes each replica's folder; see the module comment. */
  static async start(o: MemberOptions): Promise<ChaosMembers> {
    const names = Array.from({ length: o.count }, (_, i) => `member-${i + 1}`);
    const started = await Promise.allSettled(
      names.map(() => start({ crds: o.crds, nodes: 1, ...(o.log ? { log: o.log } : {}) })),
    );
    const envs = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const members: ChaosMember[] = [];
    try {
      const failed = started.find((s) => s.status === 'rejected');
      if (failed) throw failed.reason;
      const files = new Map<string, Kubeconfig[]>();
      const tokens: string[] = [];
      for (const [m, name] of names.entries()) {
        const env = envs[m] as Environment;
        const objects = new Objects(env.api);
        const sa = await installRbac(env, objects, o.rbac);
        const { token } = await env.kubeconfigFor({ name: sa.name, namespace: sa.namespace });
        tokens.push(token);
        const proxies: ApiFaultProxy[] = [];
        members.push({ name, env, objects, proxies, user: sa.user });
        for (let r = 0; r < o.replicas; r++) {
          const proxy = await ApiFaultProxy.start({
            target: { url: env.server, caPem: env.caPem },
            serving: o.serving,
            answer: (info) => o.answer(r, info, name),
            onApplied: (info) => o.record(r, info, name),
            onDenied: (info, message) => o.denied(r, info, message, name),
          });
          proxies.push(proxy);
          const user = { user: sa.user, credentials: { kind: 'token', token } as const, namespace: sa.namespace };
          const config = makeKubeconfig({ name, server: proxy.url, caPem: proxy.caPem, ...user });
          files.set(name, [...(files.get(name) ?? []), config]);
        }
      }
      const folders = Array.from({ length: o.replicas }, (_, r) => join(o.dir, `fleet-${replicaName(r)}`));
      const system = new ChaosMembers(members, folders, files, tokens);
      for (const folder of folders) await mkdir(folder, { recursive: true });
      for (const name of names) await system.away(name, false);
      return system;
    } catch (err) {
      await Promise.all(members.flatMap((m) => m.proxies.map((p) => p.close())));
      await Promise.all(envs.map((e) => e.stop()));
      throw err;
    }
  }

  /** Takes member `name` out of every replica's folder (`away`), or puts it back. */
  away(name: string, away: boolean): Promise<void> {
    const configs = this.#files.get(name) ?? [];
    if (away) this.#away.add(name);
    else this.#away.delete(name);
    const files = this.folders.map((folder) => join(folder, `${name}.kubeconfig`));
    const writes = files.map((file, r) =>
      away ? rm(file, { force: true }) : writeKubeconfig(file, configs[r] as Kubeconfig),
    );
    const done = Promise.all(writes).then(() => {});
    this.#writing.add(done);
    void done.finally(() => this.#writing.delete(done)).catch(() => {});
    return done;
  }

  /**
   * Puts every member that is away back into every folder, and resolves once no folder write is under way (a trial
   * ends with the whole fleet).
   */
  async back(): Promise<void> {
    await Promise.all([...this.#away].map((name) => this.away(name, false)));
    await Promise.all(this.#writing);
  }

  /** The member named `name`. */
  member(name: string): ChaosMember | undefined {
    return this.members.find((m) => m.name === name);
  }

  /** Closes the proxies and stops the members' control planes. */
  async stop(): Promise<void> {
    await Promise.all(this.members.flatMap((m) => m.proxies.map((p) => p.close())));
    await Promise.all(this.members.map((m) => m.env.stop()));
  }
}

/** A kind read in the members: its apiVersion and kind. */
interface MemberKind {
  readonly apiVersion: string;
  readonly kind: string;
}

/**
 * The objects of `kinds` in `namespace` of each member (by name), what the control plane makes there left out; of a
 * cluster-scoped kind, only an object named as the namespace (the trial's Namespace, made in the member): others are
 * no trial's.
 */
export async function memberObjects(
  fleet: ChaosMembers,
  kinds: readonly MemberKind[],
  namespace: string,
  ignored: ReadonlySet<string>,
): Promise<Record<string, Manifest[]>> {
  const read = async (m: ChaosMember) => {
    // a member that cannot be read is the platform's trouble: an error after 10 s, never its objects missing
    const lists = await Promise.all(kinds.map((k) => m.objects.list(k.apiVersion, k.kind, namespace, 10_000)));
    const objects = lists
      .flat()
      .filter((o) => !ignored.has(`${o.kind}/${o.metadata.name}`))
      .filter((o) => o.metadata.namespace !== undefined || o.metadata.name === namespace);
    return [m.name, objects] as const;
  };
  return Object.fromEntries(await Promise.all(fleet.members.map(read)));
}

const UID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/**
 * Each object as a line to compare across runs: `Kind name {…}`, with its labels, annotations, owners (kind and
 * name), finalizers and everything but `metadata` and `status`; each uid written as `<uid>` and the run's namespace
 * as `<namespace>`, so two runs compare equal.
 */
export function memberLines(objects: readonly Manifest[], namespace: string): string[] {
  return objects
    .map((o) => {
      const { metadata, status: _, apiVersion: __, kind, ...body } = o as Manifest & { status?: unknown };
      const m = metadata as Manifest['metadata'] & { finalizers?: string[] };
      const kept = {
        labels: m.labels ?? {},
        annotations: m.annotations ?? {},
        owners: (m.ownerReferences ?? []).map((r) => `${r.kind}/${r.name}`),
        finalizers: m.finalizers ?? [],
        ...body,
      };
      const text = JSON.stringify(kept, Object.keys(flatKeys(kept)).sort())
        .replaceAll(namespace, '<namespace>')
        .replace(UID, '<uid>');
      // a generated name is random: the prefix it was made from stands for it
      const named = m.generateName && m.name?.startsWith(m.generateName) ? `${m.generateName}<generated>` : m.name;
      return `${kind} ${(named ?? '').replaceAll(namespace, '<namespace>')} ${text}`;
    })
    .sort();
}

/** Every key at any depth of `v` (for a key-sorted `JSON.stringify`). */
function flatKeys(v: unknown, into: Record<string, true> = {}): Record<string, true> {
  if (Array.isArray(v)) for (const x of v) flatKeys(x, into);
  else if (typeof v === 'object' && v !== null)
    for (const [k, x] of Object.entries(v)) {
      into[k] = true;
      flatKeys(x, into);
    }
  return into;
}

/** `same-member-objects`: what differs between each member's lines and the fault-free run's. */
export function compareMembers(
  baseline: Readonly<Record<string, readonly string[]>>,
  trial: Readonly<Record<string, readonly string[]>>,
): { invariant: 'same-member-objects'; object: string; message: string }[] {
  const names = [...new Set([...Object.keys(baseline), ...Object.keys(trial)])].sort();
  return names.flatMap((member) => {
    const head = (line: string) => line.split(' ', 2).join(' ');
    // counted: two objects of one generated name's prefix and one body are two lines alike (a duplicate shows)
    const missing = without(baseline[member] ?? [], trial[member] ?? []);
    const extra = without(trial[member] ?? [], baseline[member] ?? []);
    return [
      ...missing.map((l) => ({
        what: head(l),
        message: extra.some((e) => head(e) === head(l))
          ? `${head(l)} differs from the fault-free run's: ${extra.find((e) => head(e) === head(l))?.slice(head(l).length + 1)} (expected ${l.slice(head(l).length + 1)})`
          : `${head(l)} is missing (the fault-free run had it)`,
      })),
      ...extra
        .filter((l) => !missing.some((x) => head(x) === head(l)))
        .map((l) => ({
          what: head(l),
          message: (baseline[member] ?? []).some((b) => head(b) === head(l))
            ? `${head(l)} is there once more than in the fault-free run (a duplicate)`
            : `${head(l)} is there, but the fault-free run had no such object`,
        })),
    ].map(({ what, message }) => ({
      invariant: 'same-member-objects' as const,
      object: `${member}: ${what}`,
      message: `in member ${member}, ${message}`,
    }));
  });
}

/** The lines of `a` not matched one for one by a line of `b`. */
function without(a: readonly string[], b: readonly string[]): string[] {
  const left = new Map<string, number>();
  for (const l of b) left.set(l, (left.get(l) ?? 0) + 1);
  return a.filter((l) => {
    const n = left.get(l) ?? 0;
    if (n > 0) left.set(l, n - 1);
    return n === 0;
  });
}
