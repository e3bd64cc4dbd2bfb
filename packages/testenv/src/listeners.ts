/**
 * @module listeners
 * Whether a process holds a listening TCP port, read from Linux's /proc. A component's readiness probe counts only
 * when the component itself listens on the port it probes: another process that took the port between `freePorts()`
 * and the component's bind would otherwise answer for it (a kube-controller-manager's `/healthz` of another
 * environment says `ok` too; the apiservers of one machine share a CA), and the component's own bind failure would go
 * unnoticed. Where /proc is missing (macOS), the answer is `undefined` and the probe alone decides.
 */
import { readdir, readFile, readlink } from 'node:fs/promises';

/** The inodes of the sockets listening on `port` (any address), or undefined without /proc. */
async function listeningInodes(port: number): Promise<Set<string> | undefined> {
  const tables = await Promise.all(
    ['/proc/net/tcp', '/proc/net/tcp6'].map((f) => readFile(f, 'utf8').catch(() => undefined)),
  );
  if (tables.every((t) => t === undefined)) return undefined;
  const inodes = new Set<string>();
  for (const table of tables) {
    for (const line of (table ?? '').split('\n').slice(1)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      const cols = line.trim().split(/\s+/);
      const local = cols[1];
      if (!local || cols[3] !== '0A') continue; // 0A: LISTEN
      if (Number.parseInt(local.slice(local.lastIndexOf(':') + 1), 16) === port && cols[9]) inodes.add(cols[9]);
    }
  }
  return inodes;
}

/**
 * True when process `pid` holds a socket listening on `port`; false when it does not (or is gone); undefined where
 * /proc cannot tell.
 */
export async function listensOn(pid: number, port: number): Promise<boolean | undefined> {
  const inodes = await listeningInodes(port);
  if (inodes === undefined) return undefined;
  if (inodes.size === 0) return false;
  const fds = await readdir(`/proc/${pid}/fd`).catch(() => undefined);
  if (fds === undefined) return false;
  for (const fd of fds) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode !== undefined && inodes.has(inode)) return true;
  }
  return false;
}
