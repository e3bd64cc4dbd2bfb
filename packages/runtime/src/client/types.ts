/**
 * @module client/types
 * The shapes of the typed client's calls: the options each takes (lists, patches, writes, deletes, the client itself)
 * and the answers that are not objects of a kind (list pages, discovery resources, the scale subresource). Types only:
 * what each call guarantees is in client/client.ts.
 */

import type { ConnectionConfig } from './kubeconfig.ts';
import type { KubeObject } from './resource.ts';
import type { RequestMetrics } from './transport.ts';
import type { WarningHandler } from './warnings.ts';

/** The metadata of a list answer. */
export interface ListMeta {
  /** The list's resourceVersion: a watch from it sees every later change. */
  readonly resourceVersion: string;
  /** The continue token of a page that has more after it. */
  readonly continue?: string;
  /**
   * Set when a shard selector filtered the list (`ListOptions.shardSelector`, KEP-5866): the selector applied, echoed
   * back. Its absence after a list that asked for one means the apiserver does not serve shard selectors.
   */
  readonly shardInfo?: { readonly selector: string };
}

/** A list answer: the items and the list's metadata. */
export interface ObjectList<T> {
  /** The objects, with `apiVersion` and `kind` filled in. */
  readonly items: T[];
  /** The list's resourceVersion (a watch from it sees every later change) and the continue token of a page. */
  readonly metadata: ListMeta;
  /** Set by `listPages` on a page that replaces every page before it (the unpaginated fallback). */
  readonly restart?: boolean;
}

/** What a list selects, and how it is fetched. */
export interface ListOptions {
  /** One namespace; all namespaces when omitted (for namespaced kinds). */
  readonly namespace?: string;
  /** e.g. `app=web,tier in (a,b)` */
  readonly labelSelector?: string;
  /** e.g. `spec.nodeName=n1` */
  readonly fieldSelector?: string;
  /**
   * e.g. `shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')`: the objects whose uid (or
   * namespace) hashes into the ranges (KEP-5866, alpha behind the apiserver's `ShardedListAndWatch` gate; an
   * apiserver without it ignores it and sends everything, without `metadata.shardInfo`).
   */
  readonly shardSelector?: string;
  /** Items per page (default 500). */
  readonly pageSize?: number;
  /** Aborts the request (it rejects with `ApiError` `Aborted`). */
  readonly signal?: AbortSignal;
}

/** One resource of a discovery APIResourceList. */
export interface APIResource {
  /** The plural resource name, as in URLs (`deployments`). */
  readonly name: string;
  /** The kind of its objects (`Deployment`). */
  readonly kind: string;
  /** Whether its objects live in a namespace. */
  readonly namespaced: boolean;
}

/**
 * The patch formats: `merge` (RFC 7386 JSON merge patch), `json` (RFC 6902 JSON patch), `strategic` (strategic merge
 * patch, built-in kinds only) and `apply` (server-side apply).
 */
export type PatchType = 'merge' | 'json' | 'strategic' | 'apply';

/** How a patch is sent. */
export interface PatchOptions {
  /** Default `merge` (JSON merge patch). `strategic` works for built-in kinds only; `apply` is server-side apply. */
  readonly type?: PatchType;
  /** Required for `apply`; recorded in managedFields. */
  readonly fieldManager?: string;
  /** Server-side apply: take ownership of conflicting fields. */
  readonly force?: boolean;
  /** Unknown or duplicate fields: fail, warn or ignore (default: the client's `fieldValidation`, else `Warn`). */
  readonly fieldValidation?: FieldValidation;
  /** Aborts the request (it rejects with `ApiError` `Aborted`). */
  readonly signal?: AbortSignal;
}

/**
 * What the apiserver does with a field the kind's schema does not have (or a field given twice), as kubectl's
 * `--validate`: `Strict` fails the write, naming the field (a create or update: BadRequest; a patch: Invalid), `Warn`
 * drops the field and answers with a warning (the apiserver's default), `Ignore` drops it silently. A server-side
 * apply refuses an unknown field whatever this says; for it the setting governs duplicate fields.
 */
export type FieldValidation = 'Strict' | 'Warn' | 'Ignore';

/** Options of a server-side apply: its field manager (required), and whether it takes conflicting fields over. */
export type ApplyOptions = Pick<PatchOptions, 'force' | 'fieldValidation' | 'signal'> & {
  readonly fieldManager: string;
};

/** Options of a create, update or subresource write. */
export interface WriteOptions {
  /** The field manager the write is recorded under in `managedFields`. */
  readonly fieldManager?: string;
  /** Unknown or duplicate fields: fail, warn or ignore (default: the client's `fieldValidation`, else `Warn`). */
  readonly fieldValidation?: FieldValidation;
  /** Validate and admit the write, but do not store it (`dryRun=All`): the answer is what would have been stored. */
  readonly dryRun?: boolean;
  /** Aborts the request (it rejects with `ApiError` `Aborted`). */
  readonly signal?: AbortSignal;
}

/** Options of a delete. */
export interface DeleteOptions {
  /**
   * What happens to the object's dependents: `Background` (the apiserver's default for most kinds: deleted after it),
   * `Foreground` (deleted before it) or `Orphan` (kept, their owner reference removed).
   */
  readonly propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  /** Seconds the object is given to shut down (pods); 0 deletes at once. */
  readonly gracePeriodSeconds?: number;
  /** Delete only if the object still has this UID / resourceVersion (else Conflict). */
  readonly preconditions?: { readonly uid?: string; readonly resourceVersion?: string };
  /** Aborts the request (it rejects with `ApiError` `Aborted`). */
  readonly signal?: AbortSignal;
}

/** How `Client.create` connects. */
export interface ClientOptions {
  /** Where and how to connect (default: `loadConfig()`, as kubectl). */
  readonly config?: ConnectionConfig;
  /** Appended to the user agent: `opkit/<version> (<name>)`, e.g. the operator's name. */
  readonly name?: string;
  /**
   * Optional client-side rate limit in requests per second (off by default, or when 0): a token bucket, as client-go's
   * QPS. A negative one is a `UsageError` (`InvalidArgument`).
   */
  readonly qps?: number;
  /** Requests allowed at once above `qps` (default 2 × qps, at least 1); below 1 is a `UsageError`. */
  readonly burst?: number;
  /** Deadline of non-watch requests (default 60 s). */
  readonly timeoutMs?: number;
  /** Request counts and latencies are reported here when set (controller-runtime's `rest_client_*` metrics). */
  readonly metrics?: RequestMetrics;
  /**
   * The `fieldValidation` of every write that names none (default: none, so the apiserver's `Warn`; a manager's
   * client: `Strict`).
   */
  readonly fieldValidation?: FieldValidation;
  /**
   * Hears each warning the apiserver answers with (its text and the request), as client-go's `WarningHandler`
   * (default: none; a manager's client logs each distinct text once).
   */
  readonly onWarning?: WarningHandler;
  /**
   * Whether gets, lists and watches of built-in kinds ask for the protobuf encoding (default `true`, as client-go's
   * clients for built-in kinds do): the apiserver encodes and the client decodes it at a fraction of JSON's cost, and
   * objects come out the same as from JSON. Custom resources, writes and their answers stay JSON. `false` asks for
   * JSON only.
   */
  readonly protobuf?: boolean;
}

/** The autoscaling/v1 Scale object of the scale subresource. */
export interface ScaleObject {
  /** `autoscaling/v1`. */
  apiVersion?: string;
  /** `Scale`. */
  kind?: string;
  /** The scaled object's name, namespace and resourceVersion. */
  metadata: KubeObject['metadata'];
  /** The desired number of replicas. */
  spec?: { replicas?: number };
  /** The observed number of replicas, and the label selector of its pods (in string form). */
  status?: { replicas: number; selector?: string };
}
