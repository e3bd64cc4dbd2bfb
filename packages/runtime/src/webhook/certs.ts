/**
 * @module webhook/certs
 * The webhook server's TLS material: where the serving certificate comes from (`CertificateSource`) and how to make
 * one (`createCertificateAuthority`, `issueServingCertificate`).
 *
 * - `FileCertificates` reads `tls.crt` / `tls.key` from a directory — a mounted Secret, as cert-manager and kubebuilder
 *   set it up — and reloads them when they change (the kubelet swaps the volume's `..data` symlink; a directory watch
 *   sees it, and a poll every `pollIntervalMs` catches what a watch misses). A new pair is used only once the key
 *   matches the certificate, so a half-written rotation never replaces a working pair.
 * - `StaticCertificates` serves a fixed pair (tests, or a caller that rotates it with `update`).
 *
 * Guarantees: `load()` fails with a `WebhookCertError` naming the file and what to do; after a successful load the
 * source always has a pair whose key matches its certificate; listeners hear of each new pair once.
 *
 * Certificates are made with node-forge: Node's crypto makes the keys (RSA 2048, native speed) and parses
 * certificates (`X509Certificate`) but cannot issue one, and @peculiar/x509 needs a global `reflect-metadata`
 * polyfill in the host process, which a library must not impose. node-forge has no dependencies and signs RSA.
 */
import { createHash, createPrivateKey, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import forge from 'node-forge';
import { OpkitError } from '../errors.ts';

export type WebhookCertErrorCode = 'CertificateMissing' | 'CertificateInvalid' | 'KeyMismatch';

export class WebhookCertError extends OpkitError<WebhookCertErrorCode> {
  override readonly name = 'WebhookCertError';
}

/** A PEM certificate (chain) and its PEM private key. */
export interface KeyPair {
  readonly certPem: string;
  readonly keyPem: string;
}

/** Where the webhook server's serving certificate comes from. */
export interface CertificateSource {
  /** Reads the first pair; rejects with a `WebhookCertError` when there is none. */
  load(): Promise<KeyPair>;
  /** The pair to serve now (after `load`). */
  current(): KeyPair;
  /** Calls `listener` with every new pair; returns the unsubscribe function. */
  onChange(listener: (pair: KeyPair) => void): () => void;
  /** Watches for new pairs until `signal` aborts (a no-op for sources that never change by themselves). */
  watch(signal: AbortSignal): void;
}

/** Checks that `keyPem` is the private key of `certPem`'s leaf certificate; throws `WebhookCertError` otherwise. */
export function checkKeyPair(pair: KeyPair, where: string): X509Certificate {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pair.certPem);
  } catch (err) {
    throw new WebhookCertError('CertificateInvalid', `${where}: not a PEM certificate`, { cause: err });
  }
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(pair.keyPem);
  } catch (err) {
    throw new WebhookCertError('CertificateInvalid', `${where}: not a PEM private key`, { cause: err });
  }
  if (!cert.checkPrivateKey(key)) {
    throw new WebhookCertError('KeyMismatch', `${where}: the private key does not belong to the certificate`);
  }
  return cert;
}

abstract class Listeners {
  readonly #listeners = new Set<(pair: KeyPair) => void>();
  onChange(listener: (pair: KeyPair) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
  protected emit(pair: KeyPair): void {
    for (const l of this.#listeners) l(pair);
  }
}

/** A pair held in memory; `update` swaps it (checked first). */
export class StaticCertificates extends Listeners implements CertificateSource {
  #pair: KeyPair;
  constructor(pair: KeyPair) {
    super();
    checkKeyPair(pair, 'the serving certificate');
    this.#pair = pair;
  }
  async load(): Promise<KeyPair> {
    return this.#pair;
  }
  current(): KeyPair {
    return this.#pair;
  }
  update(pair: KeyPair): void {
    checkKeyPair(pair, 'the serving certificate');
    this.#pair = pair;
    this.emit(pair);
  }
  watch(): void {}
}

export interface FileCertificatesOptions {
  /** The directory holding the pair, e.g. a mounted Secret (kubebuilder: `/tmp/k8s-webhook-server/serving-certs`). */
  readonly dir: string;
  readonly certName?: string;
  readonly keyName?: string;
  /** How often to re-read the files besides watching the directory (default 10 s). */
  readonly pollIntervalMs?: number;
  /** Called when a changed pair cannot be used (the previous pair stays in service). */
  readonly onError?: (err: WebhookCertError) => void;
}

/** `tls.crt` / `tls.key` in a directory, reloaded when they change. */
export class FileCertificates extends Listeners implements CertificateSource {
  readonly #o: FileCertificatesOptions;
  #pair: KeyPair | undefined;
  #digest = '';

  constructor(options: FileCertificatesOptions) {
    super();
    this.#o = options;
  }

  get certFile(): string {
    return join(this.#o.dir, this.#o.certName ?? 'tls.crt');
  }

  get keyFile(): string {
    return join(this.#o.dir, this.#o.keyName ?? 'tls.key');
  }

  async load(): Promise<KeyPair> {
    const pair = await this.#read();
    checkKeyPair(pair, this.certFile);
    this.#pair = pair;
    this.#digest = digest(pair);
    return pair;
  }

  current(): KeyPair {
    if (!this.#pair) throw new WebhookCertError('CertificateMissing', `${this.certFile}: not loaded yet (call load())`);
    return this.#pair;
  }

  /** Re-reads the files; a new, consistent pair replaces the current one and is announced. */
  async reload(): Promise<boolean> {
    let pair: KeyPair;
    try {
      pair = await this.#read();
      if (digest(pair) === this.#digest) return false;
      checkKeyPair(pair, this.certFile);
    } catch (err) {
      this.#o.onError?.(err as WebhookCertError);
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

  async #read(): Promise<KeyPair> {
    const read = async (file: string, what: string) => {
      try {
        return await readFile(file, 'utf8');
      } catch (err) {
        throw new WebhookCertError(
          'CertificateMissing',
          `${file}: cannot read the webhook's ${what} (${(err as NodeJS.ErrnoException).code ?? 'error'}); mount the serving certificate's Secret there or pass another directory`,
          { cause: err },
        );
      }
    };
    const [certPem, keyPem] = await Promise.all([read(this.certFile, 'certificate'), read(this.keyFile, 'key')]);
    return { certPem, keyPem };
  }
}

function digest(pair: KeyPair): string {
  return createHash('sha256').update(pair.certPem).update('\0').update(pair.keyPem).digest('hex');
}

/** A CA: its certificate and key (PEM). */
export interface CertificateAuthority extends KeyPair {}

export interface CertificateOptions {
  /** Default now. */
  readonly notBefore?: Date;
  /** Validity from `notBefore` (default: one year for a CA, 90 days for a serving certificate). */
  readonly validityMs?: number;
}

const DAY_MS = 86_400_000;

/** A new self-signed CA (RSA 2048, SHA-256). */
export function createCertificateAuthority(commonName: string, options: CertificateOptions = {}): CertificateAuthority {
  const { privateKey, keyPem } = newKey();
  const cert = baseCertificate(privateKey, commonName, options, 365 * DAY_MS);
  cert.setIssuer(cert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(privateKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem };
}

/** A serving certificate for `hosts` (DNS names and IP addresses), signed by `ca`. */
export function issueServingCertificate(
  ca: CertificateAuthority,
  hosts: readonly string[],
  options: CertificateOptions = {},
): KeyPair {
  if (hosts.length === 0) throw new TypeError('a serving certificate needs at least one host name or IP address');
  const caCert = forge.pki.certificateFromPem(ca.certPem);
  const caKey = forge.pki.privateKeyFromPem(ca.keyPem);
  const { privateKey, keyPem } = newKey();
  const first = hosts[0] as string;
  const cert = baseCertificate(privateKey, first, options, 90 * DAY_MS);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: hosts.map((h) => (isIP(h) ? { type: 7, ip: h } : { type: 2, value: h })),
    },
  ]);
  cert.sign(caKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem };
}

function newKey(): { privateKey: forge.pki.rsa.PrivateKey; keyPem: string } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyPem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  return { privateKey: forge.pki.privateKeyFromPem(keyPem), keyPem };
}

function baseCertificate(
  key: forge.pki.rsa.PrivateKey,
  commonName: string,
  options: CertificateOptions,
  defaultValidityMs: number,
): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
  // a positive 16-byte serial
  cert.serialNumber = `01${forge.util.bytesToHex(forge.random.getBytesSync(15))}`;
  const notBefore = options.notBefore ?? new Date();
  cert.validity.notBefore = notBefore;
  cert.validity.notAfter = new Date(notBefore.getTime() + (options.validityMs ?? defaultValidityMs));
  // UTF8String: any name is valid (the default PrintableString rejects e.g. '@' and '_')
  cert.setSubject([
    {
      name: 'commonName',
      value: commonName.slice(0, 64),
      valueTagClass: forge.asn1.Type.UTF8 as unknown as forge.asn1.Class,
    },
  ]);
  return cert;
}
