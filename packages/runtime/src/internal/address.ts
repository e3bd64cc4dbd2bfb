/**
 * @module internal/address
 * Bind addresses as kubebuilder's flags write them: `host:port`, `:port` (all interfaces), `[v6]:port`. Throws a
 * TypeError naming the address for anything else; `0` (off) is the caller's to handle before parsing.
 */
export function parseBindAddress(address: string): { host: string; port: number } {
  const m = /^(.*):(\d+)$/.exec(address);
  if (!m) throw new TypeError(`bind address "${address}" must be host:port, :port or 0`);
  const host = (m[1] as string).replace(/^\[|\]$/g, '') || '0.0.0.0';
  const port = Number(m[2]);
  if (port > 65_535) throw new TypeError(`bind address "${address}": port ${port} is out of range`);
  return { host, port };
}
