/**
 * @module client/impersonation
 * The Impersonate-* headers of a kubeconfig's `as`, `as-uid`, `as-groups` and `as-user-extra`, as kubectl sends them.
 *
 * Guarantees: values go on the wire as UTF-8 bytes (Node writes header strings as Latin-1, so they are given as such);
 * an extra's key is lower-cased and percent-encoded down to header-name characters; empty lists send no header.
 */
import type { Impersonation } from './kubeconfig.ts';

/**
 * The Impersonate-* headers for a kubeconfig's `as`, `as-uid`, `as-groups` and `as-user-extra`. Values go on the wire
 * as UTF-8 bytes, as kubectl sends them (Node writes header strings as Latin-1, so they are given as such); an extra's
 * key is percent-encoded down to header-name characters.
 */
export function impersonationHeaders(imp: Impersonation | undefined): Record<string, string | string[]> {
  if (!imp) return {};
  const bytes = (v: string) => Buffer.from(v, 'utf8').toString('latin1');
  const out: Record<string, string | string[]> = { 'impersonate-user': bytes(imp.user) };
  if (imp.uid) out['impersonate-uid'] = bytes(imp.uid);
  if (imp.groups && imp.groups.length > 0) out['impersonate-group'] = imp.groups.map(bytes);
  for (const [key, values] of Object.entries(imp.extra ?? {})) {
    if (values.length > 0) out[`impersonate-extra-${headerKey(key)}`] = values.map(bytes);
  }
  return out;
}

/** `key` lower-cased, with every byte outside [a-z0-9-_.~] percent-encoded (a valid HTTP header name). */
function headerKey(key: string): string {
  return [...Buffer.from(key.toLowerCase(), 'utf8')]
    .map((b) =>
      /[a-z0-9\-_.~]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');
}
