/**
 * When a CronJob runs: its schedule parsed (five fields, UTC, as Kubernetes' CronJob controller reads them), the
 * latest run that is due and has not run yet, and the next one. Pure: the time is given.
 */
import { Cron } from 'croner';

/** A schedule that does not parse, or a CronJob whose missed runs are too many to trust the clock. */
export class ScheduleError extends Error {
  readonly code: 'InvalidSchedule' | 'TooManyMissedRuns';
  constructor(code: ScheduleError['code'], message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ScheduleError';
    this.code = code;
  }
}

/** More missed runs than this, and the CronJob does not start one: the clock or the deadline is wrong. */
export const MAX_MISSED_RUNS = 100;

/** Parses a five-field cron schedule (minute hour day-of-month month day-of-week), read in UTC. */
export function parseSchedule(schedule: string): Cron {
  const fields = schedule.trim().split(/\s+/);
  if (fields.length !== 5)
    throw new ScheduleError(
      'InvalidSchedule',
      `expected five fields (minute hour day month weekday), got ${fields.length}`,
    );
  try {
    return new Cron(schedule, { timezone: 'UTC', paused: true });
  } catch (cause) {
    throw new ScheduleError('InvalidSchedule', (cause as Error).message.replace(/^CronPattern: /, ''), { cause });
  }
}

export interface Runs {
  /** The latest run due by `now` that has not run: after `since`, and within the starting deadline. */
  readonly missed?: Date;
  /** The first run after `now`. */
  readonly next: Date;
}

/**
 * The runs of `schedule` between `since` (the last run, or the CronJob's creation) and `now`: the latest one, which is
 * to start now unless it missed its deadline, and the next one. Runs older than `startingDeadlineSeconds` are not
 * looked at, so a long outage with a deadline starts nothing stale.
 *
 * @throws ScheduleError `InvalidSchedule`, or `TooManyMissedRuns` when more than MAX_MISSED_RUNS are due.
 */
export function dueRuns(
  o: { readonly schedule: string; readonly startingDeadlineSeconds?: number | undefined; readonly since: Date },
  now: Date,
): Runs {
  const cron = parseSchedule(o.schedule);
  let earliest = o.since;
  if (o.startingDeadlineSeconds !== undefined) {
    const deadline = new Date(now.getTime() - o.startingDeadlineSeconds * 1000);
    if (deadline > earliest) earliest = deadline;
  }
  const next = cron.nextRun(now) as Date;
  let missed: Date | undefined;
  let count = 0;
  for (let t = cron.nextRun(earliest); t !== null && t <= now; t = cron.nextRun(t)) {
    missed = t;
    count += 1;
    if (count > MAX_MISSED_RUNS)
      throw new ScheduleError(
        'TooManyMissedRuns',
        `more than ${MAX_MISSED_RUNS} runs missed since ${earliest.toISOString()}: set or lower spec.startingDeadlineSeconds, or check the clock`,
      );
  }
  return missed ? { missed, next } : { next };
}
