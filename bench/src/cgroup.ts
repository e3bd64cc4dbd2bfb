/**
 * @module cgroup
 * A memory cgroup for one process, as a container runtime makes one for a container with a memory limit: a child of
 * the bench's own memory cgroup (cgroup v2 where the unified hierarchy has the memory controller, else v1), with
 * `limitBytes` as its hard limit and no swap where the kernel accounts swap (v1 `memsw`, v2 `swap.max`). On v2 the
 * parent must delegate the memory controller to its children (`cgroup.subtree_control`), or the limit cannot be set
 * and `memoryCgroup` says so. Read back: the peak charge, how often the limit was hit and how many
 * OOM kills the kernel made in it.
 *
 * Guarantees: `remove()` moves whatever is still in the cgroup out (to the parent) and deletes it, so a failed run
 * leaves no cgroup behind; a machine without a writable memory controller fails `memoryCgroup` with an error that
 * says so, before any process is started.
 */
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** What the kernel says about one memory cgroup. */
export interface CgroupMemory {
  /** The highest charge (bytes): anonymous memory and the page cache the processes in it brought in. */
  readonly peakBytes: number;
  /** OOM kills in it. */
  readonly oomKills: number;
  /** How often the charge reached the limit (v1 `failcnt`, v2 the `max` events). */
  readonly limitHits: number;
}

export interface MemoryCgroup {
  readonly path: string;
  readonly version: 1 | 2;
  /** Its `cgroup.procs`: a process that writes its pid there before it starts is charged for all it touches. */
  readonly procs: string;
  read(): Promise<CgroupMemory>;
  remove(): Promise<void>;
}

/** The memory cgroup this process is in: `[mount + path, version]`. */
async function ownCgroup(): Promise<[string, 1 | 2]> {
  const lines = (await readFile('/proc/self/cgroup', 'utf8')).trim().split('\n');
  const v1 = lines.find((l) => l.split(':')[1]?.split(',').includes('memory'));
  if (v1) return [join('/sys/fs/cgroup/memory', v1.split(':')[2] ?? '/'), 1];
  const v2 = lines.find((l) => l.startsWith('0::'));
  if (v2) {
    for (const mount of ['/sys/fs/cgroup', '/sys/fs/cgroup/unified']) {
      const controllers = await readFile(join(mount, 'cgroup.controllers'), 'utf8').catch(() => '');
      if (controllers.split(/\s+/).includes('memory')) return [join(mount, v2.slice(3)), 2];
    }
  }
  throw new Error('no memory cgroup controller on this machine (/proc/self/cgroup): the limits scenario needs one');
}

/** A new memory cgroup named `name` under this process's own, limited to `limitBytes` without swap. */
export async function memoryCgroup(name: string, limitBytes: number): Promise<MemoryCgroup> {
  const [parent, version] = await ownCgroup();
  const path = join(parent, name);
  try {
    await mkdir(path);
  } catch (err) {
    throw new Error(`cannot make the memory cgroup ${path} (root and a writable cgroup mount are needed)`, {
      cause: err,
    });
  }
  const set = (file: string, value: string) => writeFile(join(path, file), value);
  const num = async (file: string) => Number((await readFile(join(path, file), 'utf8')).trim());
  const keyed = async (file: string, key: string) => {
    const text = await readFile(join(path, file), 'utf8').catch(() => '');
    return Number(new RegExp(`^${key} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  };
  try {
    if (version === 1) {
      await set('memory.limit_in_bytes', String(limitBytes));
      await set('memory.memsw.limit_in_bytes', String(limitBytes)).catch(() => {}); // no swap accounting: no swap
    } else {
      await set('memory.max', String(limitBytes));
      await set('memory.swap.max', '0').catch(() => {});
    }
  } catch (err) {
    await rmdir(path).catch(() => {});
    const hint =
      version === 2
        ? ": cgroup v2 needs the memory controller enabled for it (the parent's cgroup.subtree_control)"
        : '';
    throw new Error(`cannot limit the memory cgroup ${path}${hint}`, { cause: err });
  }
  return {
    path,
    version,
    procs: join(path, 'cgroup.procs'),
    read: async () =>
      version === 1
        ? {
            peakBytes: await num('memory.max_usage_in_bytes'),
            oomKills: await keyed('memory.oom_control', 'oom_kill'),
            limitHits: await num('memory.failcnt'),
          }
        : {
            peakBytes: await num('memory.peak').catch(() => 0),
            oomKills: await keyed('memory.events', 'oom_kill'),
            limitHits: await keyed('memory.events', 'max'),
          },
    async remove() {
      const procs = (await readFile(join(path, 'cgroup.procs'), 'utf8').catch(() => '')).split('\n').filter(Boolean);
      for (const pid of procs) await writeFile(join(parent, 'cgroup.procs'), pid).catch(() => {});
      try {
        await rmdir(path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
          throw new Error(`the memory cgroup ${path} could not be removed: remove it by hand (rmdir)`, { cause: err });
      }
    },
  };
}
