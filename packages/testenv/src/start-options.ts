/**
 * @module start-options
 * The options of `start()`: how the control plane is built. Each has a default.
 */
import type { CrdInput } from './crds.ts';

/** How `start()` builds the control plane; every field has a default. */
export interface StartOptions {
  /** Number of kwok fake nodes (default 3). */
  readonly nodes?: number;
  /** Pod capacity of each fake node (default 110, the kubelet's default). */
  readonly podsPerNode?: number;
  /** Directory holding every binary; else KUBEBUILDER_ASSETS, the cache, a download or a build (see binaries.ts). */
  readonly binaryDir?: string;
  /** Build with Go, when it is found, the binaries that could not be downloaded (default true). */
  readonly build?: boolean;
  /** Run directory to create (must not exist or be empty); default: a fresh directory under the OS temp dir. */
  readonly dir?: string;
  /** Keep the run directory after `stop()` (logs, etcd data) for inspection (default false). */
  readonly keepDir?: boolean;
  /** Time each component gets to become ready (default 60 s). */
  readonly startTimeoutMs?: number;
  /** Write the apiserver audit log (level Metadata, JSON lines) to `<dir>/audit.log` (default false). */
  readonly auditLog?: boolean;
  /** Extra kube-apiserver flags, e.g. `--feature-gates=...`. */
  readonly apiserverArgs?: readonly string[];
  /** Progress lines (default: stderr). */
  readonly log?: (line: string) => void;
  /**
   * Restart kube-controller-manager once a new CRD is served, so that its garbage collector handles the CRD's objects
   * at once, not up to about 40 s later when it looks for new resources again (default true; see crd-sync.ts).
   */
  readonly syncGarbageCollector?: boolean;
  /**
   * CRDs to install as the control plane comes up, before `start()` resolves (see crds.ts): paths (or `file:` URLs) of
   * YAML or JSON files or of directories of them, as envtest's `CRDDirectoryPaths`, CRD objects, or kinds with a
   * `crd()` method. A project's is `config/crd/bases`. `start()` resolves once they are served and the apiserver's
   * hold on the first creates of a new kind (a 2 s sleep while its CRD is less than 2 s Established) has passed.
   * Default: none.
   */
  readonly crds?: readonly CrdInput[];
}
