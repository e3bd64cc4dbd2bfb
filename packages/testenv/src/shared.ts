/**
 * @module shared
 * One control plane for a whole `node --test` run, as envtest's `BeforeSuite` gives one per suite.
 * `shareEnvironment(options)` makes the run's global setup (`node --test --test-global-setup=FILE`): it starts the
 * control plane before the first test file and names its run directory in `OPKIT_TESTENV_SHARED`, which the test
 * processes inherit; its teardown stops it after the last file. In a test file, `sharedEnvironment()` attaches to it.
 * A file run on its own (no global setup) gets a control plane of its own instead, started with the same call.
 *
 * Guarantees:
 * - An attached handle never stops or restarts the shared control plane: `release()` only closes its client. A
 *   handle that started its own stops it on `release()` (and, like any environment, when the process exits).
 * - If the runner dies before its teardown, the environment's watchdog ends the components (see run-dir.ts).
 * - `OPKIT_TESTENV_SHARED` naming a directory whose environment is not running fails with `NotRunning`, naming it.
 * What it does not do: isolate the files from one another. They share one cluster, so each keeps to its own namespaces
 * and object names; with `--test-concurrency=1` (the scaffold's) one file's manager, which watches every namespace, is
 * stopped before the next file's starts.
 */
import { readFile } from 'node:fs/promises';
import { ApiClient } from './api.ts';
import { type Environment, type StartOptions, start } from './environment.ts';
import { TestenvError } from './errors.ts';
import type { Kubeconfig } from './kubeconfig.ts';
import { isProcessAlive } from './process.ts';
import { type EnvironmentState, readState } from './run-dir.ts';
import { type ServiceAccountKubeconfig, type ServiceAccountRef, serviceAccountKubeconfig } from './service-account.ts';
import { type InstalledWebhooks, type InstallWebhooksOptions, installWebhooks } from './webhooks.ts';

/** The variable that names the shared control plane's run directory to the test processes. */
export const SHARED_ENVIRONMENT_VARIABLE = 'OPKIT_TESTENV_SHARED';

/** What a `--test-global-setup` module exports: Node's test runner calls both, once per run. */
export interface GlobalSetup {
  /** Starts the control plane and names it in `OPKIT_TESTENV_SHARED`. */
  readonly globalSetup: () => Promise<void>;
  /** Stops it. */
  readonly globalTeardown: () => Promise<void>;
}

/**
 * The global setup of a test run that shares one control plane, started with `options`:
 * `export const { globalSetup, globalTeardown } = shareEnvironment({ nodes: 1 });` in the file given to
 * `node --test --test-global-setup=FILE`.
 */
export function shareEnvironment(options: StartOptions = {}): GlobalSetup {
  let env: Environment | undefined;
  return {
    globalSetup: async () => {
      env = await start(options);
      process.env[SHARED_ENVIRONMENT_VARIABLE] = env.dir;
    },
    globalTeardown: async () => {
      delete process.env[SHARED_ENVIRONMENT_VARIABLE];
      await env?.stop();
    },
  };
}

/**
 * The test run's shared control plane (see the module comment); without one, one of this file's own, started with
 * `options`. `release()` it in an `after` hook.
 */
export async function sharedEnvironment(options: StartOptions = {}): Promise<SharedEnvironment> {
  const dir = process.env[SHARED_ENVIRONMENT_VARIABLE];
  if (!dir) return new SharedEnvironment(await start(options));
  const state = await readState(dir);
  if (!state || !isProcessAlive(state.ownerPid)) {
    throw new TestenvError(
      'NotRunning',
      `${SHARED_ENVIRONMENT_VARIABLE}=${dir} names no running environment: run the tests through the global setup ` +
        `that starts it (node --test --test-global-setup=…), or unset the variable to start one for this file`,
    );
  }
  const kubeconfig = JSON.parse(await readFile(state.kubeconfigPath, 'utf8')) as Kubeconfig;
  return new SharedEnvironment({ dir, state, kubeconfig });
}

/** An attached environment, read from its run directory. */
interface Attached {
  readonly dir: string;
  readonly state: EnvironmentState;
  readonly kubeconfig: Kubeconfig;
}

/**
 * A handle on a control plane for one test file: the shared one, or one it started (`owned`). It has what
 * `startTestManager` needs of a cluster, and the admin connection.
 */
export class SharedEnvironment {
  /** The run directory. */
  readonly dir: string;
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  /** Admin kubeconfig (client certificate in group system:masters). */
  readonly kubeconfigPath: string;
  /** The admin kubeconfig, parsed. */
  readonly kubeconfig: Kubeconfig;
  /** Number of fake nodes. */
  readonly nodes: number;
  /** The CA certificate (PEM) that signs the apiserver's serving certificate. */
  readonly caPem: string;
  /** Whether this handle started the control plane (no shared one ran): `release()` stops it then. */
  readonly owned: boolean;
  readonly #env: Environment | undefined;
  readonly #api: ApiClient;

  constructor(from: Environment | Attached) {
    if ('state' in from) {
      const user = from.kubeconfig.users[0]?.user ?? {};
      const pem = (b64: string | undefined) => Buffer.from(b64 ?? '', 'base64').toString();
      this.dir = from.dir;
      this.server = from.state.server;
      this.kubeconfigPath = from.state.kubeconfigPath;
      this.kubeconfig = from.kubeconfig;
      this.nodes = from.state.nodes;
      this.caPem = pem(from.kubeconfig.clusters[0]?.cluster['certificate-authority-data']);
      this.#api = new ApiClient(this.server, this.caPem, {
        kind: 'certificate',
        certPem: pem(user['client-certificate-data']),
        keyPem: pem(user['client-key-data']),
      });
      this.#env = undefined;
    } else {
      this.dir = from.dir;
      this.server = from.server;
      this.kubeconfigPath = from.kubeconfigPath;
      this.kubeconfig = from.kubeconfig as Kubeconfig;
      this.nodes = from.nodes;
      this.caPem = from.caPem;
      this.#api = from.api;
      this.#env = from;
    }
    this.owned = this.#env !== undefined;
  }

  /** Admin API client (raw JSON over HTTPS). */
  get api(): ApiClient {
    return this.#api;
  }

  /** As `Environment.kubeconfigFor`: a kubeconfig that authenticates as the ServiceAccount (created if missing). */
  kubeconfigFor(sa: ServiceAccountRef): Promise<ServiceAccountKubeconfig> {
    return serviceAccountKubeconfig({ api: this.#api, server: this.server, caPem: this.caPem, dir: this.dir }, sa);
  }

  /** As `Environment.installWebhooks`: webhook configurations and CRD conversions pointed at a loopback server. */
  installWebhooks(options: InstallWebhooksOptions): Promise<InstalledWebhooks> {
    return installWebhooks(this.#api, this.dir, options);
  }

  /** Stops the control plane when this handle started it; else closes the handle's client only. */
  async release(): Promise<void> {
    if (this.#env) await this.#env.stop();
    else this.#api.close();
  }

  /** `release()`, for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }
}
