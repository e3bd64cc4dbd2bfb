/**
 * @module fleet
 * A local fleet for tests: `startFleet({ members })` starts a hub and one control plane per named member (all at
 * once), and keeps a folder of their kubeconfigs, `<name>.kubeconfig` each: the folder `kubeconfigFolder` (in
 * `@opkit/runtime/multicluster`) reads. `add(name)` starts another member and adds its file; `remove(name)` takes its
 * file away, then stops it; `stop()` stops them all and removes the folder.
 *
 * Guarantees: a kubeconfig appears in the folder whole (written beside it, then renamed), so a provider never reads a
 * half-written one; a member's file is removed before its control plane is stopped. Names are lower-case DNS subdomains, unique, and not `hub`; a bad one fails before anything
 * starts, with a `TestenvError` `InvalidOption` naming it. A start that fails stops whatever had started.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Environment, type StartOptions, start } from './environment.ts';
import { TestenvError } from './errors.ts';
import { writeKubeconfig } from './kubeconfig.ts';

const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** What `startFleet` takes. */
export interface FleetStartOptions {
  /** The members' names, e.g. `['eu-1', 'us-2']` (lower-case DNS subdomains). */
  readonly members: readonly string[];
  /** Options of every control plane (`nodes: 0` makes them start faster when no pod must run). */
  readonly start?: StartOptions;
}

/** A hub and its members, and the folder of the members' kubeconfigs (see the module comment). */
export interface FleetEnvironment {
  /** The hub: the operator's own cluster. */
  readonly hub: Environment;
  /** The members running now, by name. */
  readonly members: ReadonlyMap<string, Environment>;
  /** The folder of the members' kubeconfigs (`<name>.kubeconfig`). */
  readonly dir: string;
  /** Starts a member and adds its kubeconfig to the folder. */
  add(name: string): Promise<Environment>;
  /** Removes a member's kubeconfig from the folder, then stops it. */
  remove(name: string): Promise<void>;
  /** Stops the hub and every member, and removes the folder. */
  stop(): Promise<void>;
}

function checkName(name: string, taken: ReadonlySet<string>): void {
  if (name.length > 253 || !NAME.test(name) || name === 'hub')
    throw new TestenvError(
      'InvalidOption',
      `a member's name must be a lower-case DNS subdomain other than "hub": ${JSON.stringify(name)}`,
    );
  if (taken.has(name)) throw new TestenvError('InvalidOption', `two members are named ${JSON.stringify(name)}`);
}

/** Starts a hub and its members (see the module comment). */
export async function startFleet(options: FleetStartOptions): Promise<FleetEnvironment> {
  const names = new Set<string>();
  for (const name of options.members) {
    checkName(name, names);
    names.add(name);
  }
  const dir = await mkdtemp(join(tmpdir(), 'opkit-fleet-'));
  const members = new Map<string, Environment>();
  const publish = async (name: string, env: Environment) => {
    if (env.kubeconfig === undefined)
      throw new TestenvError('NotRunning', `member ${name} has no kubeconfig: not running`);
    await writeKubeconfig(join(dir, `${name}.kubeconfig`), env.kubeconfig);
  };
  const started = await Promise.allSettled([undefined, ...names].map(() => start(options.start)));
  const failed = started.find((s) => s.status === 'rejected');
  const envs = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  if (failed) {
    await Promise.all(envs.map((e) => e.stop()));
    await rm(dir, { recursive: true, force: true });
    throw failed.reason;
  }
  const [hub, ...rest] = envs as [Environment, ...Environment[]];
  for (const [i, name] of [...names].entries()) {
    const env = rest[i] as Environment;
    members.set(name, env);
    await publish(name, env);
  }
  return {
    hub,
    members,
    dir,
    async add(name) {
      checkName(name, new Set(members.keys()));
      const env = await start(options.start);
      members.set(name, env);
      await publish(name, env);
      return env;
    },
    async remove(name) {
      const env = members.get(name);
      if (!env) throw new TestenvError('InvalidOption', `no member is named ${JSON.stringify(name)}`);
      await rm(join(dir, `${name}.kubeconfig`), { force: true });
      members.delete(name);
      await env.stop();
    },
    async stop() {
      await Promise.all([hub, ...members.values()].map((e) => e.stop()));
      members.clear();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
