/**
 * @module internal/address
 * Bind addresses as kubebuilder's flags write them: `host:port`, `:port` (all interfaces), `[v6]:port`. Throws a
 * `UsageError` (`InvalidArgument`) naming the address for anything else; `0` (off) is the caller's to handle before
 * parsing.
 * `boundAddress` writes a listening server's address back in the same form (`[v6]:port` for IPv6).
 */
import type { AddressInfo } from 'node:net';
import { UsageError } from '../errors.ts';

/**
 * The host and port of a bind address as the manager's servers (metrics, health, webhooks) read it: `host:port`,
 * `:port` (host `0.0.0.0`, all interfaces) or `[v6]:port` (host without the brackets); port 0 is a free port chosen
 * when the server listens. `0` alone (a server turned off) is the caller's to handle first.
 *
 * @throws UsageError (`InvalidArgument`) naming the address when it is none of these forms or its port is above 65535.
 */
export function parseBindAddress(address: string): { host: string; port: number } {
  const m = /^(.*):(\d+)$/.exec(address);
  if (!m) throw new UsageError('InvalidArgument', `bind address "${address}" must be host:port, :port or 0`);
  const host = (m[1] as string).replace(/^\[|\]$/g, '') || '0.0.0.0';
  const port = Number(m[2]);
  if (port > 65_535) {
    throw new UsageError('InvalidArgument', `bind address "${address}": port ${port} is out of range`);
  }
  return { host, port };
}

/** `host:port` a server is bound to (`[v6]:port`), or '' when it is not listening. */
export function boundAddress(server: { address(): AddressInfo | string | null } | undefined): string {
  const a = server?.address();
  if (!a || typeof a === 'string') return '';
  return `${a.address.includes(':') ? `[${a.address}]` : a.address}:${a.port}`;
}
