/**
 * @module proc
 * Process figures read from /proc: resident memory (VmRSS), its high-water mark (VmHWM) and CPU seconds
 * (utime + stime) of a pid. A process that has exited reads as 0.
 */
import { readFile } from 'node:fs/promises';

export async function rssBytes(pid: number): Promise<number> {
  return statusBytes(pid, 'VmRSS');
}

/** The peak resident memory over the process's life so far (the kernel's own high-water mark). */
export async function peakRssBytes(pid: number): Promise<number> {
  return statusBytes(pid, 'VmHWM');
}

async function statusBytes(pid: number, field: 'VmRSS' | 'VmHWM'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1];
  return kb ? Number(kb) * 1024 : 0;
}

export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11] ?? 0) + Number(fields[12] ?? 0); // utime, stime
  return ticks / 100; // USER_HZ is 100 on Linux
}
