/**
 * @module webhook/selfmanaged
 * Self-managed webhook certificates, for clusters without cert-manager: the operator makes a CA and a serving
 * certificate, keeps them in one Secret (`ca.crt`, `ca.key`, `tls.crt`, `tls.key`), rotates them before they expire,
 * and writes the CA bundle into its own webhook configurations and CRD conversion stanzas.
 *
 * - `SecretCertificates` (every replica) is the server's `CertificateSource`: it waits for the Secret (up to 2
 *   minutes), then re-reads it every `pollIntervalMs` and hands a new pair to the server, which uses it for new
 *   connections. A refusal to read the Secret (`CertificateForbidden`) fails the load at once, naming the RBAC rule it
 *   needs; a load that gives up names the last error it met (a read that failed, a pair that does not belong
 *   together) and carries it as `cause`. A re-read that fails is logged with its error, and the pair served so far stays.
 * - `CertificateRotator` (a Runnable that needs leadership: only the leader writes) creates the Secret if missing or
 *   unusable, and every `checkIntervalMs` renews what gets close to expiry.
 *
 * Guarantees — no request fails because of a rotation:
 * - A serving certificate is renewed when less than a third of its validity is left, signed by the same CA, so the
 *   bundle the apiserver trusts does not change.
 * - A CA is renewed when less than a third of its validity is left, in two steps: the new CA is first *added* to the
 *   bundle in every configuration (next to the old one) and stored in the Secret as `ca-next`; only at the first
 *   check `propagationMs` (the time the apiserver takes to see a changed configuration) later is the serving
 *   certificate re-issued by it. Checks in between keep renewing the serving certificate with the old CA. The old CA leaves the bundle at the next check after that (`checkIntervalMs` ≥ 2 × `pollIntervalMs`, so
 *   every replica serves the new certificate by then).
 * - The bundle is written with a JSON merge/JSON patch only when it differs, so an idle operator writes nothing.
 *
 * Least privilege (`selfManagedRbac`): get/update of this one Secret (and create of Secrets in the namespace, which
 * RBAC cannot narrow by name), get/patch of the named webhook configurations and CRDs.
 *
 * The Secret's layout and its reads and writes are webhook/certsecret; the bundle's writes webhook/cabundle.
 */
import { X509Certificate } from 'node:crypto';
import type { Client } from '../client/client.ts';
import { isApiError } from '../client/errors.ts';
import type { KubeObject } from '../client/resource.ts';
import { UsageError } from '../errors.ts';
import { sleep } from '../internal/sleep.ts';
import { type Logger, silentLogger } from '../logger.ts';
import { createCertificateAuthority, issueServingCertificate } from '../tls/issue.ts';
import { CertificateError, checkKeyPair, type KeyPair } from '../tls/keypair.ts';
import { CertificateListeners, type CertificateSource } from '../tls/sources.ts';
import { injectBundle } from './cabundle.ts';
import { type CertificateData, decode, readSecret, writeSecret } from './certsecret.ts';

/**
 * Options of `SecretCertificates` and `CertificateRotator` (give both the same): the Secret, the serving certificate's
 * hosts, the configurations and CRDs that get the CA bundle, and the timings.
 */
export interface SelfManagedOptions {
  /** The client the Secret, configurations and CRDs are read and written with. */
  readonly client: Client;
  /** Where the Secret lives (the operator's namespace). */
  readonly namespace: string;
  /** The Secret that holds the CA and the serving pair. */
  readonly secretName: string;
  /** DNS names (and IPs) of the serving certificate: `<service>.<namespace>.svc`, … */
  readonly hosts: readonly string[];
  /** MutatingWebhookConfiguration names whose webhooks get the CA bundle. */
  readonly mutatingWebhookConfigurations?: readonly string[];
  /** ValidatingWebhookConfiguration names whose webhooks get the CA bundle. */
  readonly validatingWebhookConfigurations?: readonly string[];
  /** CRD names (`<plural>.<group>`) whose conversion webhook gets the bundle. */
  readonly crds?: readonly string[];
  /** Default 10 years for the CA, 1 year for the serving certificate. */
  readonly caValidityMs?: number;
  /** Validity of the serving certificate (default 1 year); renewed when a third is left. */
  readonly certValidityMs?: number;
  /** How often the leader checks (default 1 h; at most a sixth of the serving validity). */
  readonly checkIntervalMs?: number;
  /** How long the apiserver may take to see a new CA bundle (default 10 s). */
  readonly propagationMs?: number;
  /** How often every replica re-reads the Secret (default 10 s). */
  readonly pollIntervalMs?: number;
  /** Where renewals, failed checks and failed re-reads of the Secret are logged; silent by default. */
  readonly log?: Logger;
  /** Injectable wall clock (tests): the rotator's checks and the load's 2-minute wait. */
  readonly now?: () => number;
}

const YEAR_MS = 365 * 86_400_000;

/** The serving pair from the Secret, on every replica. */
export class SecretCertificates extends CertificateListeners implements CertificateSource {
  readonly #o: SelfManagedOptions;
  #pair: KeyPair | undefined;

  constructor(options: SelfManagedOptions) {
    super();
    this.#o = options;
  }

  /**
   * Waits (up to 2 minutes) for the leader to create the Secret, reading it every second. Rejects with
   * `CertificateForbidden` at once when RBAC refuses the read (the message names the rule), with `CertificateMissing`
   * after 2 minutes without a usable pair (carrying the last error met as `cause`), and with the signal's reason as
   * soon as `signal` aborts, the read under way cut off.
   */
  async load(signal?: AbortSignal): Promise<KeyPair> {
    const o = this.#o;
    const where = `Secret ${o.namespace}/${o.secretName}`;
    const now = o.now ?? Date.now;
    const deadline = now() + 120_000;
    const never = new AbortController().signal;
    let last: unknown;
    for (;;) {
      signal?.throwIfAborted();
      let pair: KeyPair | undefined;
      try {
        pair = await this.#read(signal);
      } catch (err) {
        signal?.throwIfAborted();
        if (isApiError(err, 'Forbidden')) {
          throw new CertificateError(
            'CertificateForbidden',
            `cannot read ${where}: ${err.message} — the operator needs get on secrets named ${o.secretName} in ` +
              `namespace ${o.namespace} (the Role selfManagedRbac makes)`,
            { cause: err },
          );
        }
        last = err; // a NotFound is no error here (readSecret answers undefined): the leader may not have written it
      }
      signal?.throwIfAborted();
      if (pair) {
        this.#pair = pair;
        return pair;
      }
      if (now() > deadline) {
        throw new CertificateError(
          'CertificateMissing',
          last === undefined
            ? `${where} has no usable tls.crt/tls.key after 2 minutes: is the leader running its CertificateRotator?`
            : `${where} has no usable tls.crt/tls.key after 2 minutes: ${errorMessage(last)}`,
          last === undefined ? undefined : { cause: last },
        );
      }
      await sleep(1_000, signal ?? never);
    }
  }

  current(): KeyPair {
    if (!this.#pair) throw new CertificateError('CertificateMissing', 'not loaded yet (call load())');
    return this.#pair;
  }

  watch(signal: AbortSignal): void {
    const timer = setInterval(() => void this.refresh(), this.#o.pollIntervalMs ?? 10_000);
    timer.unref();
    signal.addEventListener('abort', () => clearInterval(timer), { once: true });
  }

  /**
   * Re-reads the Secret; a changed, consistent pair is announced. A read that fails (or a pair that does not belong
   * together) is logged with its error, and the pair served so far stays: resolves `false` then.
   */
  async refresh(): Promise<boolean> {
    let pair: KeyPair | undefined;
    try {
      pair = await this.#read();
    } catch (err) {
      // handled: the pair served so far stays, and the next poll tries again
      (this.#o.log ?? silentLogger).warn(
        { secret: `${this.#o.namespace}/${this.#o.secretName}`, err: errorMessage(err) },
        'cannot re-read the webhook serving certificate; serving the one loaded before',
      );
      return false;
    }
    if (!pair || (pair.certPem === this.#pair?.certPem && pair.keyPem === this.#pair.keyPem)) return false;
    this.#pair = pair;
    this.emit(pair);
    return true;
  }

  async #read(signal?: AbortSignal): Promise<KeyPair | undefined> {
    const d = decode(await readSecret(this.#o, signal));
    if (!d.cert || !d.key) return undefined;
    const pair = { certPem: d.cert, keyPem: d.key };
    checkKeyPair(pair, `Secret ${this.#o.namespace}/${this.#o.secretName}`);
    return pair;
  }
}

/** Creates and renews the Secret's CA and serving certificate, and writes the CA bundle. Runs on the leader. */
export class CertificateRotator {
  /** A Manager runs it on the leader only: only one replica writes. */
  readonly needLeaderElection = true;
  readonly #o: SelfManagedOptions;
  readonly #log: Logger;
  readonly #now: () => number;

  constructor(options: SelfManagedOptions) {
    const check = options.checkIntervalMs ?? 3_600_000;
    if (check < 2 * (options.pollIntervalMs ?? 10_000)) {
      // the old CA leaves the bundle one check after the switch: every replica must have re-read the Secret by then
      throw new UsageError('InvalidArgument', 'checkIntervalMs must be at least twice pollIntervalMs');
    }
    this.#o = options;
    this.#log = options.log ?? silentLogger;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Checks the Secret and the bundles now and every `checkIntervalMs` until `signal` aborts, creating and renewing what
   * is missing or close to expiry; a failed check is logged and retried at the next. Resolves at the stop.
   */
  async start(signal: AbortSignal): Promise<void> {
    const serving = this.#o.certValidityMs ?? YEAR_MS;
    const interval = Math.min(this.#o.checkIntervalMs ?? 3_600_000, serving / 6);
    while (!signal.aborted) {
      try {
        await this.reconcile(signal);
      } catch (err) {
        if (signal.aborted) return;
        this.#log.error({ err: (err as Error).message }, 'webhook certificate check failed; retrying');
      }
      await sleep(interval, signal);
    }
  }

  /** One check: create or renew what needs it, then make the bundle in every configuration match. */
  async reconcile(signal?: AbortSignal): Promise<void> {
    const o = this.#o;
    const secret = await readSecret(o, signal);
    const d = decode(secret);
    const now = this.#now();
    const caValidity = o.caValidityMs ?? YEAR_MS * 10;
    const certValidity = o.certValidityMs ?? YEAR_MS;
    let next: CertificateData = { ...d };
    let caUsable = false;
    if (d.ca && d.caKey) {
      try {
        caUsable = checkKeyPair({ certPem: d.ca, keyPem: d.caKey }, 'ca').ca && remaining(d.ca, now) > 0;
      } catch {
        caUsable = false;
      }
    }
    if (!caUsable) {
      // first start (or an unusable Secret): a new CA and certificate at once; nothing trusted the old ones
      const ca = createCertificateAuthority(`${o.secretName}-ca-${Math.floor(now / 1000)}`, {
        validityMs: caValidity,
        notBefore: new Date(now),
      });
      const pair = issueServingCertificate(ca, o.hosts, { validityMs: certValidity, notBefore: new Date(now) });
      next = { ca: ca.certPem, caKey: ca.keyPem, cert: pair.certPem, key: pair.keyPem };
      await injectBundle(this.#o, [ca.certPem], signal);
      await writeSecret(this.#o, secret, next, signal);
      this.#log.info({ secret: o.secretName }, 'webhook CA and serving certificate created');
      return;
    }
    const ca = d.ca as string;
    const caKey = d.caKey as string;
    const propagation = o.propagationMs ?? 10_000;
    if (d.caNext && d.caNextKey && now - issuedAt(d.caNext) >= propagation) {
      // step 2 of a CA rotation: the new CA has been in the bundle long enough; serve a certificate it signed. The old
      // CA stays in the bundle until the next check, while the replicas pick the new pair up.
      next = { ca: d.caNext, caKey: d.caNextKey, ...issue(d.caNext, d.caNextKey, o.hosts, certValidity, now) };
      await writeSecret(this.#o, secret, next, signal);
      this.#log.info({ secret: o.secretName }, 'webhook serving certificate re-issued by the new CA');
      await injectBundle(this.#o, [d.caNext, ca], signal);
      return;
    }
    if (!d.caNext && remaining(ca, now) < caValidity / 3) {
      // step 1: publish the new CA next to the old one; it signs only once the apiserver has seen it (step 2)
      const fresh = createCertificateAuthority(`${o.secretName}-ca-${Math.floor(now / 1000)}`, {
        validityMs: caValidity,
        notBefore: new Date(now),
      });
      next = { ...next, caNext: fresh.certPem, caNextKey: fresh.keyPem };
      await injectBundle(this.#o, [ca, fresh.certPem], signal);
      this.#log.info({ secret: o.secretName }, 'new webhook CA published in the bundle');
    }
    // meanwhile (and always) the serving certificate stays fresh, signed by the current CA
    const certOk =
      d.cert && d.key && signedBy(d.cert, ca) && remaining(d.cert, now) > certValidity / 3 && covers(d.cert, o.hosts);
    if (!certOk) {
      next = { ...next, ...issue(ca, caKey, o.hosts, certValidity, now) };
      this.#log.info({ secret: o.secretName }, 'webhook serving certificate renewed');
    }
    if (next !== d && JSON.stringify(next) !== JSON.stringify(d)) await writeSecret(this.#o, secret, next, signal);
    await injectBundle(this.#o, next.caNext ? [ca, next.caNext] : [ca], signal);
  }
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function issue(
  caPem: string,
  caKey: string,
  hosts: readonly string[],
  validityMs: number,
  now: number,
): CertificateData {
  const pair = issueServingCertificate({ certPem: caPem, keyPem: caKey }, hosts, {
    validityMs,
    notBefore: new Date(now),
  });
  return { cert: pair.certPem, key: pair.keyPem };
}

/** When a certificate was made (its notBefore). */
function issuedAt(pem: string): number {
  return new Date(new X509Certificate(pem).validFrom).getTime();
}

function remaining(pem: string, now: number): number {
  return new Date(new X509Certificate(pem).validTo).getTime() - now;
}

function signedBy(certPem: string, caPem: string): boolean {
  try {
    return new X509Certificate(certPem).verify(new X509Certificate(caPem).publicKey);
  } catch {
    return false;
  }
}

function covers(certPem: string, hosts: readonly string[]): boolean {
  const san = new X509Certificate(certPem).subjectAltName ?? '';
  return hosts.every((h) => san.includes(`DNS:${h}`) || san.includes(`IP Address:${h}`));
}

/** A Role (the Secret) and a ClusterRole (the configurations and CRDs) with exactly what rotation needs. */
export function selfManagedRbac(name: string, o: Omit<SelfManagedOptions, 'client' | 'hosts'>): KubeObject[] {
  // get + patch of exactly the named objects; no rule at all for a kind with none
  const named = (apiGroup: string, resource: string, names: readonly string[] = []) =>
    names.length > 0
      ? [{ apiGroups: [apiGroup], resources: [resource], resourceNames: [...names], verbs: ['get', 'patch'] }]
      : [];
  const clusterRules = [
    ...named('admissionregistration.k8s.io', 'mutatingwebhookconfigurations', o.mutatingWebhookConfigurations),
    ...named('admissionregistration.k8s.io', 'validatingwebhookconfigurations', o.validatingWebhookConfigurations),
    ...named('apiextensions.k8s.io', 'customresourcedefinitions', o.crds),
  ];
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: `${name}-webhook-certs`, namespace: o.namespace },
      rules: [
        { apiGroups: [''], resources: ['secrets'], resourceNames: [o.secretName], verbs: ['get', 'update'] },
        { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
      ],
    } as KubeObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: `${name}-webhook-certs` },
      rules: clusterRules,
    } as KubeObject,
  ];
}
