/**
 * @module client/proxy
 * Which proxy, if any, carries the connections to an apiserver, and the agent that tunnels through it.
 *
 * - `proxyFor(server, env)` applies Go's `net/http/httpproxy` rules, which kubectl and client-go follow:
 *   `HTTPS_PROXY` (or `https_proxy`) for an https server, `HTTP_PROXY` for http; never for `localhost` or a loopback
 *   address; `NO_PROXY` is a comma-separated list of host names (a name also matches its subdomains; a leading `.`
 *   or `*.` matches only subdomains), IP addresses, CIDR ranges, optionally with a `:port`, or `*` for all.
 *   Written here rather than taken from `proxy-from-env`, whose rules differ (it proxies loopback and has no CIDR
 *   ranges), so an operator reaches the same proxy that kubectl does.
 * - `proxyAgent(url)` tunnels with HTTP CONNECT through an `http://` or `https://` proxy (`https-proxy-agent`), or
 *   through a `socks5://` / `socks5h://` proxy (`socks-proxy-agent`); both are loaded only when a proxy is used.
 *   TLS to the apiserver runs end to end inside the tunnel, with the kubeconfig's CA and client certificate.
 *
 * Guarantees: a proxy URL with another scheme, or one that does not parse, is refused with a `KubeconfigError`
 * naming the value.
 */
import type { Agent } from 'node:http';
import { BlockList, isIP } from 'node:net';
import { KubeconfigError } from './kubeconfig.ts';

const SCHEMES = new Set(['http:', 'https:', 'socks5:', 'socks5h:']);

/** Checks a proxy URL (from `proxy-url` or the environment); `where` names its source in the error. */
export function checkProxyUrl(value: string, where: string): string {
  let url: URL;
  try {
    url = new URL(value.includes('://') ? value : `http://${value}`);
  } catch {
    // a proxy URL may carry a user and password: the message shows neither, nor the cause (which holds the input)
    const shown = value.replace(/^([a-z0-9+.-]*:\/\/)?[^@/]*@/i, '$1…@');
    throw new KubeconfigError(`${where}: "${shown}" is not a URL (expected e.g. http://proxy.example:3128)`);
  }
  if (!SCHEMES.has(url.protocol)) {
    throw new KubeconfigError(
      `${where}: proxy scheme "${url.protocol.slice(0, -1)}" is not supported (use http, https, socks5 or socks5h)`,
    );
  }
  return url.href;
}

/** The proxy for connections to `server` by the environment's *_PROXY / NO_PROXY variables, or undefined. */
export function proxyFor(server: string, env: NodeJS.ProcessEnv): string | undefined {
  const url = new URL(server);
  // as Go: an empty variable counts as unset
  const get = (name: string) => env[name] || env[name.toLowerCase()] || undefined;
  const raw = url.protocol === 'https:' ? get('HTTPS_PROXY') : get('HTTP_PROXY');
  if (!raw) return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  if (host === 'localhost' || isLoopback(host)) return undefined;
  if (excluded(host, port, get('NO_PROXY') ?? '')) return undefined;
  return checkProxyUrl(raw, url.protocol === 'https:' ? 'HTTPS_PROXY' : 'HTTP_PROXY');
}

function isLoopback(host: string): boolean {
  const family = isIP(host);
  if (family === 4) return host.startsWith('127.');
  if (family === 6) {
    const loop = new BlockList();
    loop.addAddress('::1', 'ipv6');
    loop.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');
    return loop.check(host, 'ipv6');
  }
  return false;
}

/** Whether two addresses of one family are the same (`fd00:0::1` is `fd00::1`). */
function sameAddress(a: string, b: string, family: number): boolean {
  const list = new BlockList();
  const type = family === 4 ? 'ipv4' : 'ipv6';
  list.addAddress(a, type);
  return list.check(b, type);
}

function excluded(host: string, port: number, noProxy: string): boolean {
  const family = isIP(host);
  for (let entry of noProxy.split(',').map((e) => e.trim().toLowerCase())) {
    if (entry === '') continue;
    if (entry === '*') return true;
    if (entry.includes('/')) {
      const [base = '', bits = ''] = entry.split('/');
      const baseFamily = isIP(base);
      if (family === 0 || baseFamily !== family) continue;
      const list = new BlockList();
      const type = family === 4 ? 'ipv4' : 'ipv6';
      try {
        list.addSubnet(base, Number(bits), type);
      } catch {
        continue;
      }
      if (list.check(host, type)) return true;
      continue;
    }
    let entryPort = 0;
    const bracketed = /^\[(.*)\](?::(\d+))?$/.exec(entry);
    if (bracketed) {
      entry = bracketed[1] ?? '';
      entryPort = Number(bracketed[2] ?? 0);
    } else if (isIP(entry) === 0) {
      const withPort = /^(.*):(\d+)$/.exec(entry);
      if (withPort) {
        entry = withPort[1] ?? '';
        entryPort = Number(withPort[2]);
      }
    }
    if (entryPort !== 0 && entryPort !== port) continue;
    const entryFamily = isIP(entry);
    if (entryFamily !== 0) {
      if (family === entryFamily && sameAddress(entry, host, family)) return true;
      continue;
    }
    if (entry.startsWith('*.')) entry = entry.slice(1);
    if (entry.startsWith('.')) {
      if (host.endsWith(entry)) return true;
      continue;
    }
    if (host === entry || host.endsWith(`.${entry}`)) return true;
  }
  return false;
}

/** Makes agents that tunnel through `proxyUrl` (checked by `checkProxyUrl`); the agent class is loaded once. */
export async function proxyAgentFactory(
  proxyUrl: string,
  options: { keepAlive: boolean; keepAliveMsecs: number },
): Promise<() => Agent> {
  const url = new URL(proxyUrl);
  if (url.protocol === 'socks5:' || url.protocol === 'socks5h:') {
    const { SocksProxyAgent } = await import('socks-proxy-agent');
    return () => new SocksProxyAgent(url, options);
  }
  const { HttpsProxyAgent } = await import('https-proxy-agent');
  return () => new HttpsProxyAgent(url, options);
}
