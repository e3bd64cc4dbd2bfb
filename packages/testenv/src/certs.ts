/**
 * @module certs
 * The environment's PKI, made with the `openssl` command: a CA, the apiserver's serving certificate (valid for
 * 127.0.0.1, localhost and the in-cluster names), one client certificate per identity, and the service-account
 * signing key pair. All keys are ECDSA P-256 (fast to make). Files are written with mode 0600 into the run directory.
 */
import { generateKeyPairSync } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TestenvError } from './errors.ts';
import { runCommand } from './process.ts';

export interface CertPair {
  readonly certFile: string;
  readonly keyFile: string;
  readonly certPem: string;
  readonly keyPem: string;
}

export interface Pki {
  readonly ca: CertPair;
  readonly serving: CertPair;
  /** Client certificates by identity name. */
  readonly clients: Readonly<Record<string, CertPair>>;
  readonly serviceAccountKeyFile: string;
  readonly serviceAccountPublicKeyFile: string;
}

export interface ClientIdentity {
  readonly name: string;
  readonly user: string;
  readonly groups: readonly string[];
}

const DAYS = '3650';

export async function createPki(dir: string, clients: readonly ClientIdentity[]): Promise<Pki> {
  const ca = await selfSignedCa(dir);
  const [serving, ...clientPairs] = await Promise.all([
    signed(dir, ca, 'serving', '/CN=kube-apiserver', [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      'extendedKeyUsage=serverAuth',
      'subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local',
    ]),
    ...clients.map((c) =>
      signed(dir, ca, `client-${c.name}`, subject(c), [
        'basicConstraints=critical,CA:FALSE',
        'keyUsage=critical,digitalSignature,keyEncipherment',
        'extendedKeyUsage=clientAuth',
      ]),
    ),
  ]);
  const sa = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const serviceAccountKeyFile = join(dir, 'sa.key');
  const serviceAccountPublicKeyFile = join(dir, 'sa.pub');
  await writeFile(serviceAccountKeyFile, sa.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  await writeFile(serviceAccountPublicKeyFile, sa.publicKey.export({ type: 'spki', format: 'pem' }), { mode: 0o600 });
  return {
    ca,
    serving: serving as CertPair,
    clients: Object.fromEntries(clients.map((c, i) => [c.name, clientPairs[i] as CertPair])),
    serviceAccountKeyFile,
    serviceAccountPublicKeyFile,
  };
}

/**
 * A CA of its own and a serving certificate for 127.0.0.1 and localhost signed by it, for a webhook server the test
 * runs on loopback (as envtest's WebhookInstallOptions); files go into `dir` as `ca.crt`, `tls.crt` and `tls.key`.
 */
export async function createLoopbackServingPki(dir: string): Promise<{ ca: CertPair; serving: CertPair }> {
  const ca = await selfSignedCa(dir);
  const serving = await signed(dir, ca, 'tls', '/CN=127.0.0.1', [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    'extendedKeyUsage=serverAuth',
    'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost',
  ]);
  return { ca, serving };
}

function subject(c: ClientIdentity): string {
  const esc = (s: string) => s.replaceAll('/', '\\/');
  return `/CN=${esc(c.user)}${c.groups.map((g) => `/O=${esc(g)}`).join('')}`;
}

async function writeKey(dir: string, name: string): Promise<string> {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const keyFile = join(dir, `${name}.key`);
  await writeFile(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  return keyFile;
}

async function selfSignedCa(dir: string): Promise<CertPair> {
  const keyFile = await writeKey(dir, 'ca');
  const certFile = join(dir, 'ca.crt');
  await openssl([
    'req',
    '-x509',
    '-new',
    '-key',
    keyFile,
    '-subj',
    '/CN=opkit-testenv-ca',
    '-days',
    DAYS,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
    '-out',
    certFile,
  ]);
  return pair(certFile, keyFile);
}

async function signed(dir: string, ca: CertPair, name: string, subj: string, extensions: string[]): Promise<CertPair> {
  const keyFile = await writeKey(dir, name);
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  const certFile = join(dir, `${name}.crt`);
  await writeFile(ext, `${extensions.join('\n')}\n`);
  await openssl(['req', '-new', '-key', keyFile, '-subj', subj, '-out', csr]);
  await openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.certFile,
    '-CAkey',
    ca.keyFile,
    '-set_serial',
    `0x${BigInt(Date.now()).toString(16)}${Math.floor(Math.random() * 1e6).toString(16)}`,
    '-days',
    DAYS,
    '-extfile',
    ext,
    '-out',
    certFile,
  ]);
  return pair(certFile, keyFile);
}

async function pair(certFile: string, keyFile: string): Promise<CertPair> {
  return {
    certFile,
    keyFile,
    certPem: await readFile(certFile, 'utf8'),
    keyPem: await readFile(keyFile, 'utf8'),
  };
}

async function openssl(args: string[]): Promise<void> {
  let result: Awaited<ReturnType<typeof runCommand>>;
  try {
    result = await runCommand('openssl', args);
  } catch (err) {
    throw new TestenvError(
      'CertificateFailed',
      'the `openssl` command is needed to make the test cluster certificates: install it (Debian: apt-get install openssl)',
      { cause: err },
    );
  }
  if (result.code !== 0) {
    throw new TestenvError('CertificateFailed', `openssl ${args[0]} failed: ${result.stderrTail.join('\n')}`);
  }
}
