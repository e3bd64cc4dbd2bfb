/**
 * @module tls/issue
 * Making certificates: a CA (`createCertificateAuthority`), a serving certificate signed by it
 * (`issueServingCertificate`), and a self-signed serving certificate (`selfSignedCertificate`, what the metrics endpoint
 * serves when no certificate is mounted — Prometheus then scrapes with `insecureSkipVerify`, as kubebuilder's scaffold
 * does until cert-manager is set up).
 *
 * Guarantees: keys are RSA 2048 and signatures SHA-256; serial numbers are random, positive and 16 bytes; a serving
 * certificate is for server authentication only and lists each host as a DNS or IP subject alternative name; `notBefore`
 * defaults to one minute ago, so a peer whose clock is slightly behind accepts a certificate made just now.
 *
 * Certificates are made with node-forge: Node's crypto makes the keys (native speed) and parses certificates
 * (`X509Certificate`) but cannot issue one, and @peculiar/x509 needs a global `reflect-metadata` polyfill in the host
 * process, which a library must not impose. node-forge has no dependencies and signs RSA.
 */
import { generateKeyPairSync } from 'node:crypto';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import type Forge from 'node-forge';
import { UsageError } from '../errors.ts';
import type { KeyPair } from './keypair.ts';

/** node-forge, loaded on first use: a process that never makes a certificate (mounted files, plain HTTP) never loads it. */
let loaded: typeof Forge | undefined;
const forge = (): typeof Forge => {
  loaded ??= createRequire(import.meta.url)('node-forge') as typeof Forge;
  return loaded;
};

/** A CA: its certificate and key (PEM). */
export interface CertificateAuthority extends KeyPair {}

/** When a certificate made here is valid. */
export interface CertificateOptions {
  /** Default one minute ago. */
  readonly notBefore?: Date;
  /** Validity from `notBefore` (default: one year for a CA or a self-signed certificate, 90 days for an issued one). */
  readonly validityMs?: number;
}

const DAY_MS = 86_400_000;

/** A new self-signed CA. */
export function createCertificateAuthority(commonName: string, options: CertificateOptions = {}): CertificateAuthority {
  const { privateKey, keyPem } = newKey();
  const cert = baseCertificate(privateKey, commonName, options, 365 * DAY_MS);
  cert.setIssuer(cert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(privateKey, forge().md.sha256.create());
  return { certPem: forge().pki.certificateToPem(cert), keyPem };
}

/** A serving certificate for `hosts` (DNS names and IP addresses), signed by `ca`. */
export function issueServingCertificate(
  ca: CertificateAuthority,
  hosts: readonly string[],
  options: CertificateOptions = {},
): KeyPair {
  const caCert = forge().pki.certificateFromPem(ca.certPem);
  return servingCertificate(hosts, options, 90 * DAY_MS, {
    subject: caCert.subject.attributes,
    key: forge().pki.privateKeyFromPem(ca.keyPem),
  });
}

/**
 * A self-signed serving certificate for `hosts` (default `localhost`, the host name, `127.0.0.1` and `::1`), valid one
 * year unless `options` say otherwise.
 */
export function selfSignedCertificate(
  hosts: readonly string[] = defaultHosts(),
  options: CertificateOptions = {},
): KeyPair {
  return servingCertificate(hosts, options, 365 * DAY_MS);
}

function defaultHosts(): string[] {
  return [...new Set(['localhost', hostname(), '127.0.0.1', '::1'])];
}

/** A serving certificate signed by `issuer`, or by its own key when there is none. */
function servingCertificate(
  hosts: readonly string[],
  options: CertificateOptions,
  defaultValidityMs: number,
  issuer?: { subject: Forge.pki.CertificateField[]; key: Forge.pki.rsa.PrivateKey },
): KeyPair {
  const first = hosts[0];
  if (first === undefined) {
    throw new UsageError('InvalidArgument', 'a serving certificate needs at least one host name or IP address');
  }
  const { privateKey, keyPem } = newKey();
  const cert = baseCertificate(privateKey, first, options, defaultValidityMs);
  cert.setIssuer(issuer?.subject ?? cert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: hosts.map((h) => (isIP(h) ? { type: 7, ip: h } : { type: 2, value: h })),
    },
  ]);
  cert.sign(issuer?.key ?? privateKey, forge().md.sha256.create());
  return { certPem: forge().pki.certificateToPem(cert), keyPem };
}

function newKey(): { privateKey: Forge.pki.rsa.PrivateKey; keyPem: string } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyPem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  return { privateKey: forge().pki.privateKeyFromPem(keyPem), keyPem };
}

function baseCertificate(
  key: Forge.pki.rsa.PrivateKey,
  commonName: string,
  options: CertificateOptions,
  defaultValidityMs: number,
): Forge.pki.Certificate {
  const cert = forge().pki.createCertificate();
  cert.publicKey = forge().pki.setRsaPublicKey(key.n, key.e);
  cert.serialNumber = `01${forge().util.bytesToHex(forge().random.getBytesSync(15))}`;
  const notBefore = options.notBefore ?? new Date(Date.now() - 60_000);
  cert.validity.notBefore = notBefore;
  cert.validity.notAfter = new Date(notBefore.getTime() + (options.validityMs ?? defaultValidityMs));
  // UTF8String: any name is valid (the default PrintableString rejects e.g. '@' and '_')
  cert.setSubject([
    {
      name: 'commonName',
      value: commonName.slice(0, 64),
      valueTagClass: forge().asn1.Type.UTF8 as unknown as Forge.asn1.Class,
    },
  ]);
  return cert;
}
