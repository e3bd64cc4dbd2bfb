/**
 * @module tls/keypair
 * A serving certificate and its key (`KeyPair`, PEM), the check that they belong together, and the TLS settings every
 * opkit server (the metrics endpoint, the webhook server) serves a pair with.
 *
 * Guarantees:
 * - `checkKeyPair` accepts a pair only when the certificate parses and the private key is the key of its leaf
 *   certificate; otherwise it throws a `CertificateError` (`CertificateInvalid` or `KeyMismatch`) naming where the pair
 *   came from.
 * - `secureContextOptions` is the one place the TLS settings live (TLS 1.2 or later): a server passes it both when it
 *   is created and to `setSecureContext` on every reload, which replaces the whole context — so a rotated certificate
 *   never brings back the process's (possibly older) default minimum version.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import type { SecureContextOptions, TlsOptions } from 'node:tls';
import { OpkitError } from '../errors.ts';

/** Why a serving certificate cannot be served. */
export type CertificateErrorCode =
  /** No pair where the source looks (a file that cannot be read, a Secret without one in time), or none loaded yet. */
  | 'CertificateMissing'
  /** The certificate or the key is not PEM that parses; the message names where the pair came from. */
  | 'CertificateInvalid'
  /** The private key is not the key of the certificate's leaf (a half-written rotation, two files mixed up). */
  | 'KeyMismatch'
  /** The operator may not read where the pair is kept (RBAC refused it the Secret); the message names the rule. */
  | 'CertificateForbidden';

/**
 * A serving certificate that cannot be read (or may not be), does not parse, or whose key is not the certificate's.
 */
export class CertificateError extends OpkitError<CertificateErrorCode> {
  override readonly name = 'CertificateError';
}

/** A PEM certificate (chain, leaf first) and its PEM private key. */
export interface KeyPair {
  /** The certificate chain in PEM, leaf first. */
  readonly certPem: string;
  /** The leaf's private key in PEM. */
  readonly keyPem: string;
}

/** Checks that `pair.keyPem` is the private key of `pair.certPem`'s leaf; `where` names the pair's origin in errors. */
export function checkKeyPair(pair: KeyPair, where: string): X509Certificate {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pair.certPem);
  } catch (err) {
    throw new CertificateError('CertificateInvalid', `${where}: not a PEM certificate`, { cause: err });
  }
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(pair.keyPem);
  } catch (err) {
    throw new CertificateError('CertificateInvalid', `${where}: not a PEM private key`, { cause: err });
  }
  if (!cert.checkPrivateKey(key)) {
    throw new CertificateError('KeyMismatch', `${where}: the private key does not belong to the certificate`);
  }
  return cert;
}

/** The lowest TLS version an opkit server accepts. */
export const TLS_MIN_VERSION = 'TLSv1.2';

/** The secure-context options for serving `pair`: at start (`createServer`) and on every `setSecureContext`. */
export function secureContextOptions(pair: KeyPair): SecureContextOptions & Pick<TlsOptions, 'minVersion'> {
  return { cert: pair.certPem, key: pair.keyPem, minVersion: TLS_MIN_VERSION };
}
