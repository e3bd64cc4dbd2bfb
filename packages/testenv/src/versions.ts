/**
 * @module versions
 * The one place where the control plane's component versions are pinned. Changing a version here changes the cache
 * directory too, so binaries of different versions never mix.
 */

/** Kubernetes release of kube-apiserver, kube-controller-manager, kube-scheduler and kubectl. */
export const KUBERNETES_VERSION = 'v1.37.2';
/** etcd server release (3.5.x: the apiserver enables watch-progress and streaming lists on ≥ 3.5.13). */
export const ETCD_VERSION = 'v3.5.35';
/** kwok release: simulated nodes and pod lifecycle. */
export const KWOK_VERSION = 'v0.8.0';
/** The oldest Go that builds the pinned versions from source (the `go` line of the build's go.mod). */
export const GO_MINIMUM = '1.26';

/** The Go module, import path and binary name of every component. */
export interface ComponentSource {
  readonly module: string;
  readonly version: string;
  readonly pkg: string;
}

export const COMPONENT_NAMES = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kwok',
  'kubectl',
] as const;
export type ComponentName = (typeof COMPONENT_NAMES)[number];

export const COMPONENT_SOURCES: Readonly<Record<ComponentName, ComponentSource>> = {
  etcd: { module: 'go.etcd.io/etcd/server/v3', version: ETCD_VERSION, pkg: 'go.etcd.io/etcd/server/v3' },
  'kube-apiserver': {
    module: 'k8s.io/kubernetes',
    version: KUBERNETES_VERSION,
    pkg: 'k8s.io/kubernetes/cmd/kube-apiserver',
  },
  'kube-controller-manager': {
    module: 'k8s.io/kubernetes',
    version: KUBERNETES_VERSION,
    pkg: 'k8s.io/kubernetes/cmd/kube-controller-manager',
  },
  'kube-scheduler': {
    module: 'k8s.io/kubernetes',
    version: KUBERNETES_VERSION,
    pkg: 'k8s.io/kubernetes/cmd/kube-scheduler',
  },
  kubectl: { module: 'k8s.io/kubernetes', version: KUBERNETES_VERSION, pkg: 'k8s.io/kubernetes/cmd/kubectl' },
  kwok: { module: 'sigs.k8s.io/kwok', version: KWOK_VERSION, pkg: 'sigs.k8s.io/kwok/cmd/kwok' },
};

/** A short tag naming the whole set, used as the cache directory name. */
export const BINARY_SET_TAG = `k8s-${KUBERNETES_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}`;
