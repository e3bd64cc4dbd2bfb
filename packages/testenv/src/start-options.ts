/**
 * @module start-options
 * The options of `start()`: how the control plane is built. Each has a default.
 */

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
}
