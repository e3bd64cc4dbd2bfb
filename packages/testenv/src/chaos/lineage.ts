/**
 * @module chaos/lineage
 * The invariants of an operator's object graph that hold for every operator, judged from objects as the apiserver
 * returned them (a list, or a watch's events):
 * - **One controller.** No object has more than one owner reference with `controller: true`.
 * - **No orphans.** Once the roots a scenario made (its custom resources) are gone, nothing that descended from them
 *   remains, at any depth (a Job's pods too). A descendant is any object that ever had an owner reference to a root or
 *   to another descendant: the record keeps every reference it saw, so an object whose reference the garbage collector
 *   removed (an owner deleted with `propagationPolicy: Orphan`) is still found, and so is one whose reference dangles.
 * - **The same children.** Per root, the live descendants counted by their owner path (`AppService>Pod`,
 *   `CronJob>Job>Pod`) and role match a fault-free run's: a duplicate child made under a stale view shows as one more.
 *   The role is the kind path unless the caller names one (`roleOf`); names from `generateName`, uids and timestamps
 *   never count.
 *
 * Guarantees: the record is monotonic (an object's references are only ever added), so the order in which objects are
 * observed does not change a verdict; a verdict names the object (kind, namespace/name) and the rule it breaks.
 */

/** An owner reference, as in `metadata.ownerReferences`. */
export interface OwnerReference {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
  readonly controller?: boolean;
}

/** The part of an object the invariants read. */
export interface ObjectRecord {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly ownerReferences?: readonly OwnerReference[];
  };
}

/** One broken invariant: which, on what object, and why. */
export interface LineageViolation {
  readonly invariant: 'one-controller' | 'no-orphans' | 'same-children';
  /** `Kind namespace/name` (or the root's, for `same-children`). */
  readonly object: string;
  readonly message: string;
}

/** `Kind namespace/name`, or `Kind name` for a cluster-scoped object. */
export function describeObject(o: ObjectRecord): string {
  const m = o.metadata ?? {};
  return `${o.kind ?? '?'} ${m.namespace ? `${m.namespace}/` : ''}${m.name ?? '?'}`;
}

/** Objects with more than one controller reference. */
export function multipleControllers(objects: Iterable<ObjectRecord>): LineageViolation[] {
  const out: LineageViolation[] = [];
  for (const o of objects) {
    const controllers = (o.metadata?.ownerReferences ?? []).filter((r) => r.controller === true);
    if (controllers.length > 1)
      out.push({
        invariant: 'one-controller',
        object: describeObject(o),
        message: `${describeObject(o)} has ${controllers.length} controller references (${controllers
          .map((r) => `${r.kind} ${r.name}`)
          .join(', ')}): at most one object may control it`,
      });
  }
  return out;
}

/** What the record knows of one object. */
interface Seen {
  readonly kind: string;
  readonly description: string;
  /** Every owner uid any observation of it named, with the owner's kind. */
  readonly owners: Map<string, string>;
}

/**
 * Every object observed, with every owner reference it ever had. Feed it each object a list or watch returned
 * (`observe`), then ask which objects descend from the roots.
 */
export class Lineage {
  readonly #seen = new Map<string, Seen>();

  /** Records `o` and its owner references (an object without a uid is ignored: it was never stored). */
  observe(o: ObjectRecord): void {
    const uid = o.metadata?.uid;
    if (uid === undefined) return;
    let seen = this.#seen.get(uid);
    if (seen === undefined) {
      seen = { kind: o.kind ?? '?', description: describeObject(o), owners: new Map() };
      this.#seen.set(uid, seen);
    }
    for (const r of o.metadata?.ownerReferences ?? []) seen.owners.set(r.uid, r.kind);
  }

  /**
   * Each descendant of `roots` (uids) with its owner path from the nearest root, e.g. `AppService>Pod`. An object owned
   * along several paths gets the shortest; roots themselves are not their own descendants.
   */
  descendants(roots: Iterable<string>): Map<string, string> {
    const rootSet = new Set(roots);
    const children = new Map<string, string[]>();
    for (const [uid, seen] of this.#seen)
      for (const owner of seen.owners.keys()) {
        const list = children.get(owner);
        if (list === undefined) children.set(owner, [uid]);
        else list.push(uid);
      }
    const paths = new Map<string, string>();
    let frontier = new Map([...rootSet].map((uid) => [uid, this.#seen.get(uid)?.kind ?? '?']));
    // level by level, so each descendant gets its shortest path; of several equally short, the first by name
    while (frontier.size > 0) {
      const next = new Map<string, string>();
      for (const [uid, path] of frontier)
        for (const child of children.get(uid) ?? []) {
          if (rootSet.has(child) || paths.has(child)) continue;
          const childPath = `${path}>${this.#seen.get(child)?.kind ?? '?'}`;
          const other = next.get(child);
          if (other === undefined || childPath < other) next.set(child, childPath);
        }
      for (const [uid, path] of next) paths.set(uid, path);
      frontier = next;
    }
    return paths;
  }

  /** Every owner `uid` ever had, by uid (with the owner's kind). */
  owners(uid: string): ReadonlyMap<string, string> {
    return this.#seen.get(uid)?.owners ?? new Map();
  }

  /** How the record describes `uid` (`Kind namespace/name`), if it saw it. */
  describe(uid: string): string | undefined {
    return this.#seen.get(uid)?.description;
  }
}

/**
 * The objects that lost every owner: live, once owned (by what the record saw), and no owner they name now is live.
 * An owner deleted with propagationPolicy Orphan leaves such objects (their references removed), and so does a
 * delete the garbage collector did not finish. Call it once the garbage collector had its time.
 */
export function ownerless(lineage: Lineage, live: Iterable<ObjectRecord>): LineageViolation[] {
  const liveList = [...live];
  const liveUids = new Set(liveList.map((o) => o.metadata?.uid));
  const out: LineageViolation[] = [];
  for (const o of liveList) {
    const uid = o.metadata?.uid;
    const ever = uid === undefined ? new Map<string, string>() : lineage.owners(uid);
    if (ever.size === 0) continue;
    const refs = o.metadata?.ownerReferences ?? [];
    if (refs.some((r) => liveUids.has(r.uid)) || [...ever.keys()].some((owner) => liveUids.has(owner))) continue;
    const was = [...ever].map(([owner, kind]) => lineage.describe(owner) ?? `${kind} ${owner}`).join(', ');
    out.push({
      invariant: 'no-orphans',
      object: describeObject(o),
      message:
        refs.length === 0
          ? `${describeObject(o)} outlived its owner ${was}: it has no owner reference left (deleted with propagationPolicy Orphan, or the reference was removed)`
          : `${describeObject(o)} outlived its owner ${was}, which is gone, and the garbage collector has not removed it`,
    });
  }
  return out;
}

/** Per root (`Kind namespace/name`), the count of its live descendants by role. */
export type ChildShape = ReadonlyMap<string, ReadonlyMap<string, number>>;

/**
 * The shape of the roots' live descendants: for each root, how many by role (`roleOf`, by default the owner path such
 * as `CronJob>Job>Pod`).
 */
export function childShape(
  lineage: Lineage,
  roots: readonly ObjectRecord[],
  live: Iterable<ObjectRecord>,
  roleOf: (o: ObjectRecord, path: string) => string = (_o, path) => path,
): ChildShape {
  const liveList = [...live];
  const shape = new Map<string, Map<string, number>>();
  for (const root of roots) {
    const uid = root.metadata?.uid;
    if (uid === undefined) continue;
    const descendants = lineage.descendants([uid]);
    const counts = new Map<string, number>();
    for (const o of liveList) {
      const path = descendants.get(o.metadata?.uid ?? '');
      if (path === undefined) continue;
      const role = roleOf(o, path);
      counts.set(role, (counts.get(role) ?? 0) + 1);
    }
    shape.set(describeObject(root), counts);
  }
  return shape;
}

/** Where `trial`'s children differ from `baseline`'s (a fault-free run of the same scenario), one line per role. */
export function compareChildren(baseline: ChildShape, trial: ChildShape): LineageViolation[] {
  const out: LineageViolation[] = [];
  for (const root of new Set([...baseline.keys(), ...trial.keys()])) {
    const want = baseline.get(root) ?? new Map<string, number>();
    const got = trial.get(root) ?? new Map<string, number>();
    for (const role of [...new Set([...want.keys(), ...got.keys()])].sort()) {
      const w = want.get(role) ?? 0;
      const g = got.get(role) ?? 0;
      if (w === g) continue;
      out.push({
        invariant: 'same-children',
        object: root,
        message: `${root}: ${g} ${role} (the fault-free run made ${w}): ${g > w ? 'a duplicate child' : 'a child missing'}`,
      });
    }
  }
  return out;
}
