/**
 * @module crds
 * The CRDs `start({ crds })` installs as the control plane comes up, as envtest's `CRDDirectoryPaths` does: files or
 * directories of YAML or JSON (a directory's `.yaml`, `.yml` and `.json` files, not its subdirectories), or CRD objects
 * (or kinds with a `crd()` method, as `defineKind` makes them). For a project, `config/crd/bases`, which
 * `opkit generate` keeps up to date.
 *
 * Why at start: the apiserver holds the first creates of a custom resource (a 2 s sleep) while its CRD's Established
 * condition is less than 2 s old (kubernetes/kubernetes#99199, for apiservers behind a load balancer). `start()`
 * resolves once that has passed for every CRD it installed (most of it passes while the controllers start), so the
 * first test's create is served at once; a test manager that applies the same CRD again (`startTestManager`) changes
 * nothing.
 *
 * Guarantees:
 * - Everything is read and checked before anything is applied: a path that does not exist, a directory with no CRD,
 *   a document that is not YAML or JSON, or one that is not an `apiextensions.k8s.io/v1` `CustomResourceDefinition`
 *   with a name, fails `start()` with `InvalidOption` naming the file (and the document) — a typo in a path would
 *   otherwise test nothing.
 * - Each CRD is applied (server-side apply, forced, as field manager `opkit-test`: `startTestManager`'s, whose apply
 *   of the same CRD, or of one with another conversion, then replaces it) right after the apiserver is ready and
 *   before the controllers start, so the garbage collector knows its kind from its own start; `start()` resolves only
 *   once every CRD is Established and each of its served versions answers a list. A CRD the apiserver refuses fails
 *   `start()` with `ApiRequestFailed`, naming the CRD and the apiserver's message.
 * Caveat: a server-side apply of one of these CRDs by another field manager keeps the fields this one set that it
 * leaves out: changing a conversion from `service` to `url` that way is refused (`exactly one of url or service`).
 * `startTestManager` and `installWebhooks` are not affected; a test that installs its CRDs itself should not pass
 * them here.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import yaml from 'js-yaml';
import type { ApiClient } from './api.ts';
import { TestenvError } from './errors.ts';
import { waitFor } from './wait.ts';

/** A CRD to install: a file or directory of them (a path, or a `file:` URL), a CRD object, or a kind with `crd()`. */
export type CrdInput = string | URL | object | { crd(): object };

/** A CRD as read: its name, its served resources, the object, and where it came from (for messages). */
export interface LoadedCrd {
  readonly name: string;
  readonly object: object;
  readonly from: string;
  /** `/apis/<group>/<version>/<plural>` of each served version. */
  readonly lists: readonly string[];
}

/**
 * The field manager `startTestManager` (@opkit/runtime/testing) applies CRDs with: its apply of a CRD installed here
 * then replaces this one's fields (a conversion stanza it sets differently, or leaves out) instead of adding to them,
 * as server-side apply does for the fields of another manager.
 */
const FIELD_MANAGER = 'opkit-test';
const FILE_TYPES = new Set(['.yaml', '.yml', '.json']);

interface Condition {
  readonly type: string;
  readonly status: string;
  readonly lastTransitionTime?: string;
}

/** Reads and checks every CRD of `inputs` (see the module comment); applies nothing. */
export async function loadCrds(inputs: readonly CrdInput[]): Promise<LoadedCrd[]> {
  const out: LoadedCrd[] = [];
  for (const [i, input] of inputs.entries()) {
    if (typeof input === 'string' || input instanceof URL) {
      out.push(...(await fromPath(typeof input === 'string' ? input : fileURLToPath(input))));
    } else {
      const object = hasCrd(input) ? input.crd() : input;
      out.push(checked(object, `crds[${i}]`));
    }
  }
  return out;
}

function hasCrd(input: object): input is { crd(): object } {
  return typeof (input as { crd?: unknown }).crd === 'function';
}

async function fromPath(path: string): Promise<LoadedCrd[]> {
  const info = await stat(path).catch(() => undefined);
  if (!info) {
    throw new TestenvError(
      'InvalidOption',
      `crds: ${path} does not exist: give the directory of the project's CRDs (opkit generate writes config/crd/bases), or a file of them`,
    );
  }
  const files = info.isDirectory()
    ? (await readdir(path))
        .filter((n) => FILE_TYPES.has(extname(n)) && n !== 'kustomization.yaml')
        .sort()
        .map((n) => join(path, n))
    : [path];
  const crds = (await Promise.all(files.map(fromFile))).flat();
  if (crds.length === 0) {
    throw new TestenvError(
      'InvalidOption',
      `crds: ${path} holds no CRD (no .yaml, .yml or .json file with a CustomResourceDefinition): run opkit generate, or check the path`,
    );
  }
  return crds;
}

async function fromFile(file: string): Promise<LoadedCrd[]> {
  let docs: unknown[];
  try {
    docs = yaml.loadAll(await readFile(file, 'utf8')).filter((d) => d !== null && d !== undefined);
  } catch (err) {
    throw new TestenvError(
      'InvalidOption',
      `crds: ${file} is not YAML or JSON: ${(err as Error).message.split('\n')[0]}`,
      {
        cause: err,
      },
    );
  }
  return docs.map((doc, i) => checked(doc, docs.length > 1 ? `${file} (document ${i + 1})` : file));
}

interface CrdShape {
  apiVersion?: unknown;
  kind?: unknown;
  metadata?: { name?: unknown };
  spec?: { group?: unknown; names?: { plural?: unknown }; versions?: { name?: unknown; served?: unknown }[] };
}

function checked(doc: unknown, from: string): LoadedCrd {
  const crd = (typeof doc === 'object' && doc !== null ? doc : {}) as CrdShape;
  if (crd.apiVersion !== 'apiextensions.k8s.io/v1' || crd.kind !== 'CustomResourceDefinition') {
    const what = `${String(crd.apiVersion ?? 'no apiVersion')} ${String(crd.kind ?? 'no kind')}`;
    throw new TestenvError(
      'InvalidOption',
      `crds: ${from} is ${what}, not an apiextensions.k8s.io/v1 CustomResourceDefinition: give only CRDs (install other objects in the test)`,
    );
  }
  const name = crd.metadata?.name;
  const group = crd.spec?.group;
  const plural = crd.spec?.names?.plural;
  if (typeof name !== 'string' || name === '' || typeof group !== 'string' || typeof plural !== 'string') {
    throw new TestenvError(
      'InvalidOption',
      `crds: ${from} lacks metadata.name, spec.group or spec.names.plural: it is not a CRD the apiserver can take`,
    );
  }
  const lists = (crd.spec?.versions ?? [])
    .filter((v) => v.served === true && typeof v.name === 'string')
    .map((v) => `/apis/${group}/${String(v.name)}/${plural}?limit=1`);
  return { name, object: doc as object, from, lists };
}

/**
 * The apiserver holds the first creates of a kind (a 2 s sleep) while its CRD's Established condition is less than
 * `CREATE_HOLD_MS` old by the condition's `lastTransitionTime`, which is kept to the second (kubernetes/kubernetes#99199).
 * Measured here: a create 1 s after the CRD was seen Established slept 2,009 ms; one 1.5 s or more after, none.
 */
const CREATE_HOLD_MS = 2_000;

/**
 * Applies `crds` and waits until each is Established and served (see the module comment); resolves to when the
 * apiserver's hold on their first creates ends (epoch ms): `CREATE_HOLD_MS` (and 50 ms) after the latest of their
 * Established conditions' `lastTransitionTime` (the apiserver runs on this machine's clock). `start()` waits for it
 * after its other phases, which take most of it.
 */
export async function installCrds(api: ApiClient, crds: readonly LoadedCrd[], timeoutMs: number): Promise<number> {
  for (const crd of crds) {
    const res = await api.request({
      method: 'PATCH',
      path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.name}?fieldManager=${FIELD_MANAGER}&force=true`,
      contentType: 'application/apply-patch+yaml',
      body: crd.object,
    });
    if (res.status >= 300) {
      const message = (res.body as { message?: string }).message ?? res.text.slice(0, 500);
      throw new TestenvError(
        'ApiRequestFailed',
        `crds: the apiserver refused the CRD ${crd.name} (from ${crd.from}): ${res.status} ${message}`,
      );
    }
  }
  let established = 0;
  for (const crd of crds) {
    const ready = await waitFor(
      `the CRD ${crd.name} to be Established`,
      async () => {
        const res = await api.request<{ status?: { conditions?: Condition[] } }>({
          path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.name}`,
        });
        const condition = res.body.status?.conditions?.find((c) => c.type === 'Established' && c.status === 'True');
        return res.status === 200 && condition !== undefined ? condition : undefined;
      },
      timeoutMs,
      50,
    );
    const at = Date.parse(ready.lastTransitionTime ?? '');
    established = Math.max(established, Number.isNaN(at) ? Date.now() : at);
    for (const list of crd.lists) {
      await waitFor(
        `${list} to be served`,
        async () => (await api.request({ path: list })).status === 200,
        timeoutMs,
        50,
      );
    }
  }
  return established + CREATE_HOLD_MS + 50;
}
