/**
 * @module crd-sync
 * Keeps kube-controller-manager's garbage collector current with the CRDs. The collector learns which resources it
 * handles by discovery when the controller-manager starts, and after that only every 30 s (a constant upstream, with no
 * flag): until then, deleting an owner leaves the objects of a CRD installed since in place, for up to about 40 s. An
 * environment watches the CRDs and, once a CRD that the running controller-manager did not have at its start is
 * Established and listed by discovery, restarts the controller-manager, whose first discovery then includes it.
 *
 * Guarantees:
 * - A new CRD (a new uid: installed, or deleted and installed again) gets one restart, about `settleMs` after it is
 *   served; the CRDs installed together within `settleMs` share it. Deleting or changing a CRD restarts nothing.
 * - A controller-manager that is not running (a test stopped it) is not started; one that a test restarted or started
 *   again counts as current with every CRD seen by then.
 * - A watch that breaks (an apiserver restart, a compaction) is listed again and resumed: a CRD installed meanwhile is
 *   still seen.
 * - It never keeps the process alive: its watch, timers and waits are unreferenced, as the components are.
 * Cost: each restart pauses the controller-manager's controllers (Deployments, Jobs, StatefulSets, …) for about a
 * second. `StartOptions.syncGarbageCollector: false` turns this off.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient, WatchEvent } from './api.ts';

/** What the sync needs to know of a CRD: its uid and where discovery lists it. */
export interface CrdRef {
  readonly uid: string;
  readonly name: string;
  /** `<group>/<version>` of its first served version, where discovery lists `plural`. */
  readonly groupVersion: string;
  readonly plural: string;
}

/**
 * Which Established CRDs the controller-manager did not have at its start (pure; the sync feeds it the watch's
 * events and tells it of each start).
 */
export class CrdLedger {
  readonly #established = new Map<string, CrdRef>();
  readonly #known = new Set<string>();

  /** Applies one watch event, or the items of a list (`reset`). */
  apply(type: WatchEvent['type'], crd: unknown): void {
    const ref = crdRef(crd);
    if (!ref) return;
    if (type === 'DELETED' || !isEstablished(crd)) this.#established.delete(ref.uid);
    else this.#established.set(ref.uid, ref);
  }

  /** Replaces what is established by the items of a list. */
  reset(items: readonly unknown[]): void {
    this.#established.clear();
    for (const item of items) this.apply('ADDED', item);
  }

  /** The established CRDs the controller-manager did not have at its last start. */
  pending(): CrdRef[] {
    return [...this.#established.values()].filter((c) => !this.#known.has(c.uid));
  }

  /** The controller-manager (re)starts now: what is established now is in its first discovery. */
  started(): void {
    this.#known.clear();
    for (const uid of this.#established.keys()) this.#known.add(uid);
  }
}

/** How the sync reaches the environment. */
export interface CrdSyncOptions {
  readonly api: ApiClient;
  /**
   * Restarts the controller-manager unless it is stopped, calling `started()` right before it starts it again;
   * resolves to whether it did.
   */
  readonly restart: () => Promise<boolean>;
  readonly log: (line: string) => void;
  /** How long to wait after a new CRD is served, gathering others, before the restart (default 200 ms). */
  readonly settleMs?: number;
}

const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/** Watches the CRDs and restarts the controller-manager for new ones (see the module comment). */
export class CrdSync {
  readonly #o: CrdSyncOptions;
  readonly #ledger = new CrdLedger();
  readonly #stop = new AbortController();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running: Promise<void> | undefined;
  #loop: Promise<void> | undefined;

  constructor(options: CrdSyncOptions) {
    this.#o = options;
  }

  /**
   * Starts watching; the controller-manager just started has every CRD that exists now (those `start({ crds })`
   * installed before it): resolves once they are listed, so a CRD installed after that is new to it.
   */
  async start(): Promise<void> {
    const list = await this.#o.api.must<{ items: unknown[]; metadata: { resourceVersion: string } }>({ path: CRDS });
    this.#ledger.reset(list.items);
    this.#ledger.started();
    this.#loop = this.#watchLoop(list.metadata.resourceVersion);
  }

  /** The controller-manager was (re)started by someone else: it has every CRD seen by now. */
  started(): void {
    this.#ledger.started();
  }

  /** Stops watching; resolves once a restart under way has ended. */
  async stop(): Promise<void> {
    this.#stop.abort();
    clearTimeout(this.#timer);
    await Promise.all([this.#loop, this.#running]);
  }

  async #watchLoop(listedAt: string): Promise<void> {
    const signal = this.#stop.signal;
    let resourceVersion: string | undefined = listedAt;
    let failures = 0;
    while (!signal.aborted) {
      try {
        if (resourceVersion === undefined) {
          const list = await this.#o.api.must<{ items: unknown[]; metadata: { resourceVersion: string } }>({
            path: CRDS,
          });
          this.#ledger.reset(list.items);
          resourceVersion = list.metadata.resourceVersion;
          this.#schedule();
        }
        const from: string = resourceVersion;
        await this.#o.api.watch(
          `${CRDS}?watch=1&allowWatchBookmarks=true&resourceVersion=${from}`,
          (event) => {
            if (event.type === 'ERROR') {
              resourceVersion = undefined; // 410 Gone, or another error: list again
              return;
            }
            resourceVersion = event.object.metadata?.resourceVersion ?? resourceVersion;
            if (event.type === 'BOOKMARK') return;
            this.#ledger.apply(event.type, event.object);
            this.#schedule();
          },
          { signal, unref: true },
        );
        failures = 0;
      } catch {
        if (signal.aborted) return;
        resourceVersion = undefined;
        failures++;
        await sleep(Math.min(100 * 2 ** failures, 5_000), undefined, { signal, ref: false }).catch(() => {});
      }
    }
  }

  /** Restarts the controller-manager `settleMs` after the last change, while a CRD is pending. */
  #schedule(): void {
    clearTimeout(this.#timer);
    if (this.#stop.signal.aborted || this.#ledger.pending().length === 0) return;
    this.#timer = setTimeout(() => {
      // one restart at a time: a CRD served during one is pending again once it ended
      this.#running ??= this.#restart().finally(() => {
        this.#running = undefined;
        this.#schedule();
      });
    }, this.#o.settleMs ?? 200);
    this.#timer.unref();
  }

  async #restart(): Promise<void> {
    const pending = this.#ledger.pending();
    if (pending.length === 0) return;
    await this.#served(pending);
    if (this.#stop.signal.aborted) return;
    const t0 = performance.now();
    const done = await this.#o.restart().catch((err: unknown) => {
      this.#o.log(`kube-controller-manager could not be restarted for new CRDs: ${String(err)}`);
      return false;
    });
    // not running (a test stopped it; its next start discovers them) or failed: nothing to do until a new CRD
    if (!done) this.#ledger.started();
    else {
      const names = pending.map((c) => c.name).join(', ');
      const took = ((performance.now() - t0) / 1000).toFixed(1);
      this.#o.log(
        `kube-controller-manager restarted in ${took} s so that its garbage collector handles ${names} now (it looks for new resources only every 30 s)`,
      );
    }
  }

  /** Waits (up to 5 s) until discovery lists each CRD's resource, which the controller-manager's discovery reads. */
  async #served(crds: readonly CrdRef[]): Promise<void> {
    const deadline = performance.now() + 5_000;
    for (const crd of crds) {
      while (!this.#stop.signal.aborted && performance.now() < deadline) {
        const res = await this.#o.api
          .request<{ resources?: { name: string }[] }>({ path: `/apis/${crd.groupVersion}`, timeoutMs: 2_000 })
          .catch(() => undefined);
        if (res?.status === 200 && res.body.resources?.some((r) => r.name === crd.plural)) break;
        await sleep(50, undefined, { ref: false });
      }
    }
  }
}

/** A CRD's ref, or undefined when it is not one. */
function crdRef(crd: unknown): CrdRef | undefined {
  const o = crd as {
    metadata?: { uid?: string; name?: string };
    spec?: { group?: string; names?: { plural?: string }; versions?: { name?: string; served?: boolean }[] };
  };
  const version = o.spec?.versions?.find((v) => v.served !== false)?.name;
  const { uid, name } = o.metadata ?? {};
  const plural = o.spec?.names?.plural;
  if (!uid || !name || !plural || !version || !o.spec?.group) return undefined;
  return { uid, name, plural, groupVersion: `${o.spec.group}/${version}` };
}

/** Whether a CRD's Established condition is True. */
function isEstablished(crd: unknown): boolean {
  const conditions = (crd as { status?: { conditions?: { type?: string; status?: string }[] } }).status?.conditions;
  return conditions?.some((c) => c.type === 'Established' && c.status === 'True') === true;
}
