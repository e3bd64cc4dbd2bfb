/**
 * @module webhook/certsecret
 * The Secret self-managed webhook certificates live in: its layout (`ca.crt`, `ca.key`, `ca-next.crt`, `ca-next.key`,
 * `tls.crt`, `tls.key`), reading it and writing it back. Internal to webhook/selfmanaged.
 *
 * Guarantees: `readSecret` answers `undefined` for a Secret that does not exist (the leader may not have written it
 * yet) and throws every other failure; `writeSecret` updates the Secret it was read as (its resourceVersion, so a
 * concurrent write conflicts instead of being overwritten) or creates it when there was none; `decode` and `encode`
 * are inverse over the keys of the layout, and ignore every other key.
 */
import { type Secret, Secrets } from '../client/builtins.ts';
import type { Client } from '../client/client.ts';
import { isNotFound } from '../client/errors.ts';

/** Where the Secret is: the client it is read and written with, its namespace and name. */
export interface SecretLocation {
  /** The client the Secret is read and written with. */
  readonly client: Client;
  /** The Secret's namespace. */
  readonly namespace: string;
  /** The Secret's name. */
  readonly secretName: string;
}

const KEYS = {
  ca: 'ca.crt',
  caKey: 'ca.key',
  caNext: 'ca-next.crt',
  caNextKey: 'ca-next.key',
  cert: 'tls.crt',
  key: 'tls.key',
};

/** The Secret's PEMs: the CA, the CA being introduced (`caNext`), and the serving pair. */
export type CertificateData = Partial<Record<keyof typeof KEYS, string>>;

/** The PEMs of `secret` (none of a missing Secret). */
export function decode(secret: Secret | undefined): CertificateData {
  const out: CertificateData = {};
  for (const [k, file] of Object.entries(KEYS) as [keyof typeof KEYS, string][]) {
    const v = secret?.data?.[file];
    if (typeof v === 'string') out[k] = Buffer.from(v, 'base64').toString('utf8');
  }
  return out;
}

function encode(d: CertificateData): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, file] of Object.entries(KEYS) as [keyof typeof KEYS, string][]) {
    const v = d[k];
    if (v !== undefined) out[file] = Buffer.from(v).toString('base64');
  }
  return out;
}

/** The Secret, or `undefined` when it does not exist. */
export async function readSecret(o: SecretLocation, signal?: AbortSignal): Promise<Secret | undefined> {
  try {
    return await o.client.get(Secrets, { namespace: o.namespace, name: o.secretName }, signal ? { signal } : {});
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Writes `d` as the Secret: an update of `secret` as it was read, or a create when there was none. */
export async function writeSecret(
  o: SecretLocation,
  secret: Secret | undefined,
  d: CertificateData,
  signal?: AbortSignal,
): Promise<void> {
  const body = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: o.secretName,
      namespace: o.namespace,
      ...(secret?.metadata?.resourceVersion ? { resourceVersion: secret.metadata.resourceVersion } : {}),
    },
    type: 'Opaque',
    data: encode(d),
  } as Secret;
  const opts = signal ? { signal } : {};
  if (secret) await o.client.update(Secrets, body, opts);
  else await o.client.create(Secrets, body, opts);
}
