/**
 * @module tls/sources
 * Where a server's serving certificate comes from (`CertificateSource`), for the webhook server and the metrics
 * endpoint alike.
 *
 * - `FileCertificates` reads `tls.crt` / `tls.key` (the keys of a `kubernetes.io/tls` Secret, as cert-manager writes
 *   it) from a directory — a mounted Secret — and reloads them when they change: the kubelet swaps the volume's `..data`
 *   symlink, a directory watch sees it, and a poll every `pollIntervalMs` catches what a watch misses.
 * - `StaticCertificates` serves a pair held in memory (tests, a self-signed pair, or a caller that rotates it with
 *   `update`).
 *
 * Guarantees: `load()` rejects with a `CertificateError` naming the file and what to do, and with the signal's reason
 * (an `AbortError`, unless the caller aborted with another) as soon as the signal given to it aborts (a stop never
 * waits on a load); after a successful load the source always
 * has a pair whose key matches its certificate — a changed pair that is unreadable or inconsistent (a half-written
 * rotation) is reported to `onError` and the previous pair stays; listeners hear of each new pair once; once the
 * signal given to `watch` aborts, nothing watches or polls any more.
 */
import { createHash } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CertificateError, checkKeyPair, type KeyPair } from './keypair.ts';

/** Where a server's serving certificate comes from. */
export interface CertificateSource {
  /**
   * Reads the first pair; rejects with a `CertificateError` when there is none, and at once with the signal's reason
   * when `signal` aborts first.
   */
  load(signal?: AbortSignal): Promise<KeyPair>;
  /** The pair to serve now (after `load`). */
  current(): KeyPair;
  /** Calls `listener` with every new pair; returns the unsubscribe function. */
  onChange(listener: (pair: KeyPair) => void): () => void;
  /** Watches for new pairs until `signal` aborts (a no-op for sources that never change by themselves). */
  watch(signal: AbortSignal): void;
}

/** The listeners of a `CertificateSource`, for sources to extend. */
export abstract class CertificateListeners {
  readonly #listeners = new Set<(pair: KeyPair) => void>();
  onChange(listener: (pair: KeyPair) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
  protected emit(pair: KeyPair): void {
    for (const l of this.#listeners) l(pair);
  }
}

/**
 * A pair held in memory; `update` swaps it (checked first). Made without one (a pair handed over later, as the test
 * manager's webhooks get theirs), `load` and `current` throw `CertificateMissing` until the first `update`.
 */
export class StaticCertificates extends CertificateListeners implements CertificateSource {
  #pair: KeyPair | undefined;
  constructor(pair?: KeyPair) {
    super();
    if (pair !== undefined) checkKeyPair(pair, 'the serving certificate');
    this.#pair = pair;
  }
  async load(signal?: AbortSignal): Promise<KeyPair> {
    signal?.throwIfAborted();
    return this.current();
  }
  current(): KeyPair {
    if (this.#pair === undefined)
      throw new CertificateError('CertificateMissing', 'no serving certificate yet: update(pair) hands one over');
    return this.#pair;
  }
  /** Serves `pair` from now on (checked first: a key that is not the certificate's throws) and tells the listeners. */
  update(pair: KeyPair): void {
    checkKeyPair(pair, 'the serving certificate');
    this.#pair = pair;
    this.emit(pair);
  }
  watch(): void {}
}

/** Where a certificate and its key are on disk. */
export interface CertificateFiles {
  /** The directory holding the pair, e.g. a mounted Secret (kubebuilder: `/tmp/k8s-webhook-server/serving-certs`). */
  readonly dir: string;
  /** Default `tls.crt`. */
  readonly certName?: string;
  /** Default `tls.key`. */
  readonly keyName?: string;
}

/** Options of `FileCertificates`: the files, and how changes are picked up. */
export interface FileCertificatesOptions extends CertificateFiles {
  /** What the certificate serves, in messages: "cannot read the <purpose> certificate …" (default `serving`). */
  readonly purpose?: string;
  /** How often to re-read the files besides watching the directory (default 10 s). */
  readonly pollIntervalMs?: number;
  /** Called when a changed pair cannot be used (the previous pair stays in service). */
  readonly onError?: (err: CertificateError) => void;
}

/** `tls.crt` / `tls.key` in a directory, reloaded when they change. */
export class FileCertificates extends CertificateListeners implements CertificateSource {
  readonly #o: FileCertificatesOptions;
  #pair: KeyPair | undefined;
  #digest = '';

  constructor(options: FileCertificatesOptions) {
    super();
    this.#o = options;
  }

  /** The certificate's path (`dir`/`certName`, default `tls.crt`). */
  get certFile(): string {
    return join(this.#o.dir, this.#o.certName ?? 'tls.crt');
  }

  /** The key's path (`dir`/`keyName`, default `tls.key`). */
  get keyFile(): string {
    return join(this.#o.dir, this.#o.keyName ?? 'tls.key');
  }

  async load(signal?: AbortSignal): Promise<KeyPair> {
    const pair = await this.#read(signal);
    checkKeyPair(pair, this.#where());
    this.#pair = pair;
    this.#digest = digest(pair);
    return pair;
  }

  current(): KeyPair {
    if (!this.#pair) throw new CertificateError('CertificateMissing', `${this.certFile}: not loaded yet (call load())`);
    return this.#pair;
  }

  /** Re-reads the files; a new, consistent pair replaces the current one and is announced. */
  async reload(): Promise<boolean> {
    let pair: KeyPair;
    try {
      pair = await this.#read();
      if (digest(pair) === this.#digest) return false;
      checkKeyPair(pair, this.#where());
    } catch (err) {
      this.#o.onError?.(err as CertificateError);
      return false;
    }
    this.#pair = pair;
    this.#digest = digest(pair);
    this.emit(pair);
    return true;
  }

  watch(signal: AbortSignal): void {
    if (signal.aborted) return;
    let watcher: FSWatcher | undefined;
    let pending: NodeJS.Timeout | undefined;
    const soon = () => {
      if (pending) return;
      // the kubelet writes the new files, then swaps the symlink: read once the burst of events is over
      pending = setTimeout(() => {
        pending = undefined;
        void this.reload();
      }, 50);
    };
    try {
      watcher = watch(this.#o.dir, { persistent: false }, soon);
      watcher.on('error', () => watcher?.close());
    } catch {
      watcher = undefined; // the poll below still picks changes up
    }
    const poll = setInterval(() => void this.reload(), this.#o.pollIntervalMs ?? 10_000);
    poll.unref();
    signal.addEventListener(
      'abort',
      () => {
        watcher?.close();
        clearInterval(poll);
        if (pending) clearTimeout(pending);
      },
      { once: true },
    );
  }

  #where(): string {
    return `${this.keyFile} and ${this.certFile}`;
  }

  async #read(signal?: AbortSignal): Promise<KeyPair> {
    const purpose = this.#o.purpose ?? 'serving';
    const read = async (file: string, what: string) => {
      signal?.throwIfAborted();
      try {
        return await readFile(file, signal ? { encoding: 'utf8', signal } : 'utf8');
      } catch (err) {
        signal?.throwIfAborted();
        throw new CertificateError(
          'CertificateMissing',
          `cannot read the ${purpose} ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message} — mount the certificate's Secret there, or point to another directory`,
          { cause: err },
        );
      }
    };
    // the certificate first, so a directory without either names the certificate
    const certPem = await read(this.certFile, 'certificate');
    return { certPem, keyPem: await read(this.keyFile, 'key') };
  }
}

function digest(pair: KeyPair): string {
  return createHash('sha256').update(pair.certPem).update('\0').update(pair.keyPem).digest('hex');
}
