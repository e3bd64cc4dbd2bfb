/**
 * @module manager/servingcert
 * The certificate the secure metrics endpoint serves, as controller-runtime's metrics server picks it:
 * - with a certificate directory, `<dir>/<certName>` and `<dir>/<keyName>` (default `tls.crt`, `tls.key`, the keys of a
 *   `kubernetes.io/tls` Secret, e.g. one cert-manager issues) are read at start and read again when the certificate
 *   file changes (a mounted Secret is updated in place), so a rotated certificate is served without a restart;
 * - without one, a self-signed certificate is made at start (RSA 2048, SHA-256, valid one year) for `localhost`,
 *   `127.0.0.1`, `::1` and the host name. Prometheus then scrapes with `insecureSkipVerify`, as kubebuilder's scaffold
 *   does until cert-manager is set up.
 *
 * Guarantees: a missing or unreadable file, or a certificate and key that do not match, fail at start with a
 * `MetricsAuthError` (`CertificateUnreadable`) naming the file; a bad file seen on a reload keeps the previous pair.
 *
 * The certificate is built with node-forge: Node's crypto makes the key (native and fast) but cannot issue X.509
 * certificates; node-forge is pure JavaScript with no dependencies, maintained, and needs no global polyfill (the
 * WebCrypto-based @peculiar/x509 requires installing a `reflect-metadata` global, which a library must not do).
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { hostname } from 'node:os';
import { join } from 'node:path';

/** node-forge, loaded on first use: a process that never makes a certificate does not pay for loading it. */
const loadForge = (): typeof import('node-forge') => createRequire(import.meta.url)('node-forge');

import { MetricsAuthError } from './metricsauth.ts';

export interface CertificateFiles {
  /** Directory holding the certificate and key. */
  readonly dir: string;
  /** Default `tls.crt`. */
  readonly certName?: string;
  /** Default `tls.key`. */
  readonly keyName?: string;
}

export interface KeyPair {
  readonly cert: string;
  readonly key: string;
}

/** A self-signed certificate and key (PEM) for `names` (DNS names and IP addresses). */
export function selfSignedCertificate(names: readonly string[] = defaultNames(), now = new Date()): KeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const forge = loadForge();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString());
  cert.serialNumber = `01${randomBytes(15).toString('hex')}`;
  cert.validity.notBefore = new Date(now.getTime() - 60_000);
  cert.validity.notAfter = new Date(now.getTime() + 365 * 86_400_000);
  const subject = [{ name: 'commonName', value: `${hostname()}-metrics@${Math.floor(now.getTime() / 1000)}` }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: names.map((n) => (isIp(n) ? { type: 7, ip: n } : { type: 2, value: n })),
    },
  ]);
  cert.sign(
    forge.pki.privateKeyFromPem(privateKey.export({ type: 'pkcs1', format: 'pem' }).toString()),
    forge.md.sha256.create(),
  );
  return { cert: forge.pki.certificateToPem(cert), key: keyPem };
}

function defaultNames(): string[] {
  return [...new Set(['localhost', hostname(), '127.0.0.1', '::1'])];
}

function isIp(name: string): boolean {
  return /^\d+\.\d+\.\d+\.\d+$/.test(name) || name.includes(':');
}

/** Reads the pair from `files`, checking that the key belongs to the certificate. */
export async function readKeyPair(files: CertificateFiles): Promise<KeyPair> {
  const certPath = join(files.dir, files.certName ?? 'tls.crt');
  const keyPath = join(files.dir, files.keyName ?? 'tls.key');
  const read = async (path: string, what: string) => {
    try {
      return await readFile(path, 'utf8');
    } catch (err) {
      throw new MetricsAuthError(
        'CertificateUnreadable',
        `cannot read the metrics ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message} — ` +
          'mount the Secret there, or leave the certificate path unset to serve a self-signed certificate',
        { cause: err },
      );
    }
  };
  const cert = await read(certPath, 'certificate');
  const key = await read(keyPath, 'key');
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (err) {
    throw new MetricsAuthError('CertificateUnreadable', `${certPath} is not a PEM certificate`, { cause: err });
  }
  let matches: boolean;
  try {
    const pub = createPublicKey(createPrivateKey(key));
    matches = x509.publicKey.equals(pub);
  } catch (err) {
    throw new MetricsAuthError('CertificateUnreadable', `${keyPath} is not a PEM private key`, { cause: err });
  }
  if (!matches) {
    throw new MetricsAuthError('CertificateUnreadable', `${keyPath} is not the key of the certificate ${certPath}`);
  }
  return { cert, key };
}

/**
 * Calls `onChange` with the new pair whenever the files in `files.dir` change and still form a valid pair; a bad pair
 * is reported to `onError` and the previous one stays. Returns a function that stops watching.
 */
export function watchKeyPair(
  files: CertificateFiles,
  onChange: (pair: KeyPair) => void,
  onError: (err: unknown) => void,
): () => void {
  let timer: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
  const reload = () => {
    clearTimeout(timer);
    // a Secret volume swaps a symlink and writes several files: read once they have settled
    timer = setTimeout(() => readKeyPair(files).then(onChange).catch(onError), 200);
  };
  try {
    watcher = watch(files.dir, { persistent: false }, reload);
    watcher.on('error', onError);
  } catch (err) {
    onError(err);
  }
  return () => {
    clearTimeout(timer);
    watcher?.close();
  };
}
