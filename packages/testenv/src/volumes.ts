/**
 * @module volumes
 * Dynamic volume provisioning in an environment, with what Kubernetes itself ships: kube-controller-manager's in-tree
 * host-path provisioner (`--enable-hostpath-provisioner`, provisioner `kubernetes.io/host-path`) behind two
 * StorageClasses, and the removal of the directories it made when the cluster ends.
 *
 * Guarantees:
 * - `createStorageClasses()` creates `standard` (the default class, `WaitForFirstConsumer`) and `standard-immediate`
 *   (`Immediate`), both `reclaimPolicy: Delete` and `allowVolumeExpansion: false` (the expander has no host-path
 *   resizer: it would accept a bigger request and never grow the volume), and keeps a class that exists (409).
 * - The provisioner makes each volume's directory at `/tmp/hostpath_pv/<uuid>`: the path is hard-coded in Kubernetes'
 *   `pkg/volume/hostpath` (not configurable, so it cannot live in the run directory), and its deleter only removes
 *   paths under `/tmp`. Only paths of exactly that shape (`isVolumeDir`) are ever removed here, and only those the
 *   environment itself names: `provisionedVolumeDirs()` lists them from its apiserver (what `stop()` uses, once
 *   kube-controller-manager has stopped), `volumeDirsOf(dir)` finds them in the etcd files of run directory `dir`
 *   (every PV object, current or deleted, is stored there with its path: what the watchdog and the reaping of stale
 *   run directories use, when no apiserver runs any more). So the volumes go with the cluster, `keepDir` or not.
 * - `shareVolumeRoot()` (at start) makes `/tmp/hostpath_pv` itself mode 1777, so environments of several users share
 *   it; each volume's directory belongs to the user running kube-controller-manager (mode 0750).
 * Caveats: a directory the provisioner made in the instant before kube-controller-manager was killed, before the PV
 * object was written, is named nowhere and stays (empty). `stop()` removes the directories of the PVs that exist when
 * it stops: one whose PV was deleted without being reclaimed (a `Retain` class of your own, then the PV deleted) is
 * yours to remove. A `/tmp/hostpath_pv` another user made 0750 before this version is theirs to `chmod 1777`.
 */
import { chmod, mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { ApiClient } from './api.ts';
import { TestenvError } from './errors.ts';

/** The provisioner of the StorageClasses: kube-controller-manager's in-tree host-path provisioner. */
export const HOST_PATH_PROVISIONER = 'kubernetes.io/host-path';

/** Where the host-path provisioner makes every volume's directory (`<root>/<uuid>`); hard-coded in Kubernetes. */
export const HOST_PATH_VOLUME_ROOT = '/tmp/hostpath_pv';

/** The names of the environment's StorageClasses. */
export const STORAGE_CLASSES = {
  /** The default class (`storageclass.kubernetes.io/is-default-class: "true"`), binding `WaitForFirstConsumer`. */
  default: 'standard',
  /** The class that binds and provisions at once (`Immediate`), without waiting for a pod. */
  immediate: 'standard-immediate',
} as const;

/** A StorageClass as `createStorageClasses` writes it (storage.k8s.io/v1). */
export interface StorageClassManifest {
  readonly apiVersion: 'storage.k8s.io/v1';
  readonly kind: 'StorageClass';
  readonly metadata: { readonly name: string; readonly annotations: Readonly<Record<string, string>> };
  readonly provisioner: string;
  readonly reclaimPolicy: 'Delete';
  readonly volumeBindingMode: 'WaitForFirstConsumer' | 'Immediate';
  readonly allowVolumeExpansion: false;
}

/** The two StorageClasses of an environment (see `STORAGE_CLASSES`). */
export function storageClassManifests(): StorageClassManifest[] {
  const manifest = (
    name: string,
    isDefault: boolean,
    volumeBindingMode: StorageClassManifest['volumeBindingMode'],
  ): StorageClassManifest => ({
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name, annotations: { 'storageclass.kubernetes.io/is-default-class': String(isDefault) } },
    provisioner: HOST_PATH_PROVISIONER,
    reclaimPolicy: 'Delete',
    volumeBindingMode,
    allowVolumeExpansion: false,
  });
  return [
    manifest(STORAGE_CLASSES.default, true, 'WaitForFirstConsumer'),
    manifest(STORAGE_CLASSES.immediate, false, 'Immediate'),
  ];
}

/** Creates the StorageClasses of `storageClassManifests()`; one that exists already is kept. */
export async function createStorageClasses(api: ApiClient): Promise<void> {
  for (const body of storageClassManifests()) {
    const res = await api.request({ method: 'POST', path: '/apis/storage.k8s.io/v1/storageclasses', body });
    if (res.status !== 201 && res.status !== 409) {
      throw new TestenvError(
        'ApiRequestFailed',
        `creating StorageClass ${body.metadata.name}: ${res.status} ${res.text}`,
      );
    }
  }
}

const MARKER = Buffer.from(`${HOST_PATH_VOLUME_ROOT}/`);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** True when `path` has the shape of a directory the host-path provisioner makes: `/tmp/hostpath_pv/<uuid>`. */
export function isVolumeDir(path: string): boolean {
  return path.startsWith(MARKER.toString()) && UUID.test(path.slice(MARKER.length));
}

/** The distinct volume directories (`/tmp/hostpath_pv/<uuid>`, lower-case uuid) named anywhere in `data`. */
export function volumeDirsIn(data: Buffer): string[] {
  const found = new Set<string>();
  for (let at = data.indexOf(MARKER); at !== -1; at = data.indexOf(MARKER, at + MARKER.length)) {
    const candidate = data.toString('latin1', at, at + MARKER.length + 36);
    if (isVolumeDir(candidate)) found.add(candidate);
  }
  return [...found];
}

/** The volume directories named in the etcd data (`<dir>/etcd`: database, WAL, snapshots) of run directory `dir`. */
export async function volumeDirsOf(dir: string): Promise<string[]> {
  const files = await readdir(join(dir, 'etcd'), { recursive: true, withFileTypes: true }).catch(() => []);
  const found = new Set<string>();
  for (const file of files) {
    if (!file.isFile()) continue;
    const data = await readFile(join(file.parentPath, file.name)).catch(() => undefined);
    if (data) for (const path of volumeDirsIn(data)) found.add(path);
  }
  return [...found];
}

/** The directories of the PVs the host-path provisioner made that exist now, from the apiserver (`ApiRequestFailed`). */
export async function provisionedVolumeDirs(api: ApiClient): Promise<string[]> {
  const list = await api.must<{ items?: PersistentVolumeFields[] }>({
    path: '/api/v1/persistentvolumes',
    timeoutMs: 2_000,
  });
  return (list.items ?? [])
    .filter((pv) => pv.metadata?.annotations?.['pv.kubernetes.io/provisioned-by'] === HOST_PATH_PROVISIONER)
    .map((pv) => pv.spec?.hostPath?.path ?? '')
    .filter(isVolumeDir);
}

/**
 * Makes `HOST_PATH_VOLUME_ROOT` shared by every user of the machine (mode 1777, as /tmp), before the provisioner runs:
 * it would make it 0750, and another user's environment could then provision nothing. A root made by another user
 * is left as it is.
 */
export async function shareVolumeRoot(root = HOST_PATH_VOLUME_ROOT): Promise<void> {
  await mkdir(root, { recursive: true });
  const st = await stat(root);
  if (st.uid === process.getuid?.() && (st.mode & 0o7777) !== 0o1777) await chmod(root, 0o1777);
}

/** The fields of a PersistentVolume that `provisionedVolumeDirs` reads. */
interface PersistentVolumeFields {
  readonly metadata?: { readonly annotations?: Readonly<Record<string, string>> };
  readonly spec?: { readonly hostPath?: { readonly path?: string } };
}

/**
 * Removes the volume directories of the environment of run directory `dir` (see the module comment); returns how many.
 * `known` are those already listed (by `provisionedVolumeDirs` while the apiserver served); without it, they are found
 * in the environment's etcd data. Call it once kube-controller-manager has stopped, before the run directory goes.
 */
export async function removeVolumeDirs(dir: string, known?: readonly string[]): Promise<number> {
  const paths = (known ?? (await volumeDirsOf(dir))).filter(isVolumeDir); // never anything else, whoever calls

  await Promise.all(paths.map((path) => rm(path, { recursive: true, force: true })));
  return paths.length;
}
