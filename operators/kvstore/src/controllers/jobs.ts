/**
 * @module controllers/jobs
 * Reading a Job's outcome the way the Job controller reports it: `Complete` or `Failed` conditions set to True are
 * final (a Job never leaves them); anything else is still running.
 */
import type { Job } from '@opkit/runtime/kinds';

export type JobOutcome =
  | { readonly state: 'Running' }
  | { readonly state: 'Succeeded'; readonly at: string }
  | { readonly state: 'Failed'; readonly message: string };

/** A Job's outcome (`Running` until a final condition is True). */
export function jobOutcome(job: Job): JobOutcome {
  const cond = (type: string) => job.status?.conditions?.find((c) => c.type === type && c.status === 'True');
  const complete = cond('Complete');
  if (complete) return { state: 'Succeeded', at: job.status?.completionTime ?? complete.lastTransitionTime ?? '' };
  const failed = cond('Failed');
  if (failed)
    return { state: 'Failed', message: `${failed.reason ?? 'Failed'}: ${failed.message ?? 'the Job failed'}` };
  return { state: 'Running' };
}
