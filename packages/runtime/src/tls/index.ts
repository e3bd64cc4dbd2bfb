/**
 * @module @opkit/runtime/tls
 * Serving certificates for the webhook server and the metrics endpoint: where a pair comes from (files reloaded on
 * rotation, or a pair in memory), and how to make one (a CA and certificates it signs, or a self-signed certificate).
 */
export {
  type CertificateAuthority,
  type CertificateOptions,
  createCertificateAuthority,
  issueServingCertificate,
  selfSignedCertificate,
} from './issue.ts';
export { CertificateError, type CertificateErrorCode, type KeyPair } from './keypair.ts';
export {
  type CertificateFiles,
  type CertificateSource,
  FileCertificates,
  type FileCertificatesOptions,
  StaticCertificates,
} from './sources.ts';
