/**
 * @module certs
 * The environment's PKI, made with the `openssl` command: a CA, the apiserver's serving certificate (valid for
 * 127.0.0.1, localhost and the in-cluster names), one client certificate per identity, and the service-account
 * signing key pair. All keys are ECDSA P-256 (fast to make). Files are written with mode 0600 into the run directory.
 *
 * The PKI is made once per machine and reused (`createPki`'s `cacheDir`, `<cache>/pki/<digest>`): nothing in it
 * depends on an environment's ports or directory, and the eleven `openssl` runs cost about a second of every start.
 * Guarantees: each environment gets its own copy of the files; a cached set is used only when complete (written to a
 * temporary directory, then renamed into place, so a concurrent start never reads half of one) and valid for at least
 * another 30 days, else a new one is made; a cache that cannot be written only means the PKI is made each time. The
 * environments of one machine thus share their CA and keys: a credential of one is accepted by another, which on
 * loopback test clusters of one user gives nothing away.
 */
import { createHash, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
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

/**
 * The environment's PKI in `dir`: copied from `cacheDir` (when given) if a complete, valid set for `clients` is there,
 * else made, and then kept there for the next environment (see the module comment).
 */
export async function createPki(dir: string, clients: readonly ClientIdentity[], cacheDir?: string): Promise<Pki> {
  const cached = cacheDir ? join(cacheDir, `pki-${pkiDigest(clients)}`) : undefined;
  if (cached && (await copyCached(cached, dir))) return readPki(dir, clients);
  // none cached (or it is going away): make one, and keep it unless the cache cannot be written
  const pki = await makePki(dir, clients);
  if (cached) await keep(dir, cached, pkiFiles(clients)).catch(() => {});
  return pki;
}

const SERVING_EXTENSIONS = [
  'basicConstraints=critical,CA:FALSE',
  'keyUsage=critical,digitalSignature,keyEncipherment',
  'extendedKeyUsage=serverAuth',
  'subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local',
];
const CLIENT_EXTENSIONS = [
  'basicConstraints=critical,CA:FALSE',
  'keyUsage=critical,digitalSignature,keyEncipherment',
  'extendedKeyUsage=clientAuth',
];
/** A cached set is replaced when its certificates expire within this time. */
const MIN_VALIDITY_MS = 30 * 86_400_000;

/** What the PKI's content depends on: the identities and the extensions (a change makes a new cached set). */
function pkiDigest(clients: readonly ClientIdentity[]): string {
  const what = JSON.stringify({ v: 1, days: DAYS, clients, SERVING_EXTENSIONS, CLIENT_EXTENSIONS });
  return createHash('sha256').update(what).digest('hex').slice(0, 16);
}

/** The files of a PKI for `clients`. */
function pkiFiles(clients: readonly ClientIdentity[]): string[] {
  const pairs = ['ca', 'serving', ...clients.map((c) => `client-${c.name}`)];
  return [...pairs.flatMap((n) => [`${n}.key`, `${n}.crt`]), 'sa.key', 'sa.pub'];
}

/** The files of the cached set `cached` when it is complete and valid for `MIN_VALIDITY_MS` more; else undefined. */
async function validSet(cached: string): Promise<string[] | undefined> {
  const files = await readdir(cached).catch(() => undefined);
  if (!files?.includes('complete')) return undefined;
  const ca = await readFile(join(cached, 'ca.crt'), 'utf8').catch(() => undefined);
  const validTo = ca ? Date.parse(new X509Certificate(ca).validTo) : 0;
  return validTo - Date.now() > MIN_VALIDITY_MS ? files.filter((f) => f !== 'complete') : undefined;
}

/** Copies a cached PKI into `dir`: false when there is no valid one (or it went away meanwhile). */
async function copyCached(cached: string, dir: string): Promise<boolean> {
  const files = await validSet(cached).catch(() => undefined);
  if (!files) return false;
  return Promise.all(files.map((f) => copyFile(join(cached, f), join(dir, f)))).then(
    () => true,
    () => false,
  );
}

/**
 * Keeps `files` of `dir` as the cached set `cached`, unless a valid one is there: written aside, then renamed into
 * place (an expired set is replaced; when two starts race, the first rename wins).
 */
async function keep(dir: string, cached: string, files: readonly string[]): Promise<void> {
  if (await validSet(cached)) return;
  const parent = join(cached, '..');
  await mkdir(parent, { recursive: true });
  const aside = await mkdtemp(join(parent, '.partial-'));
  try {
    await Promise.all(files.map((f) => copyFile(join(dir, f), join(aside, f))));
    await writeFile(join(aside, 'complete'), '');
    await rm(cached, { recursive: true, force: true });
    await rename(aside, cached);
  } finally {
    await rm(aside, { recursive: true, force: true });
  }
}

/** The PKI whose files are in `dir`. */
async function readPki(dir: string, clients: readonly ClientIdentity[]): Promise<Pki> {
  const at = (name: string) => pair(join(dir, `${name}.crt`), join(dir, `${name}.key`));
  const [ca, serving, ...clientPairs] = await Promise.all([
    at('ca'),
    at('serving'),
    ...clients.map((c) => at(`client-${c.name}`)),
  ]);
  return {
    ca: ca as CertPair,
    serving: serving as CertPair,
    clients: Object.fromEntries(clients.map((c, i) => [c.name, clientPairs[i] as CertPair])),
    serviceAccountKeyFile: join(dir, 'sa.key'),
    serviceAccountPublicKeyFile: join(dir, 'sa.pub'),
  };
}

async function makePki(dir: string, clients: readonly ClientIdentity[]): Promise<Pki> {
  const ca = await selfSignedCa(dir);
  const [serving, ...clientPairs] = await Promise.all([
    signed(dir, ca, 'serving', '/CN=kube-apiserver', SERVING_EXTENSIONS),
    ...clients.map((c) => signed(dir, ca, `client-${c.name}`, subject(c), CLIENT_EXTENSIONS)),
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
