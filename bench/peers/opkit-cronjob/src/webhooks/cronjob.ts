/**
 * @module webhooks/cronjob
 * The admission webhooks of CronJob (batch/v1), as the kubebuilder book's:
 * - defaultCronJob: `suspend: false` and the history limits (3 succeeded, 1 failed) where not given;
 * - validateCronJob: a schedule that parses (five fields), and a name of at most 52 characters (its Jobs are named
 *   `<name>-<10-digit time>`, at most 63).
 */
import {
  defaulter,
  fieldErrors,
  type ValidationResult,
  validator,
  type WebhookDefinition,
} from '@opkit/runtime/webhook';
import { type CronJob, CronJobs } from '../api/v1/cronjob.ts';
import { parseSchedule, ScheduleError } from '../controllers/schedule.ts';

export const DEFAULT_SUCCESSFUL_HISTORY = 3;
export const DEFAULT_FAILED_HISTORY = 1;
export const MAX_NAME_LENGTH = 52;

export function defaultCronJob(obj: CronJob): void {
  obj.spec.concurrencyPolicy ??= 'Allow';
  obj.spec.suspend ??= false;
  obj.spec.successfulJobsHistoryLimit ??= DEFAULT_SUCCESSFUL_HISTORY;
  obj.spec.failedJobsHistoryLimit ??= DEFAULT_FAILED_HISTORY;
}

export function validateCronJob(obj: CronJob): ValidationResult {
  const errors = [];
  const name = obj.metadata.name ?? '';
  if (name.length > MAX_NAME_LENGTH) errors.push(fieldErrors.tooLong('metadata.name', name, MAX_NAME_LENGTH));
  try {
    parseSchedule(obj.spec.schedule);
  } catch (err) {
    if (!(err instanceof ScheduleError)) throw err;
    errors.push(fieldErrors.invalid('spec.schedule', obj.spec.schedule, err.message));
  }
  return { errors };
}

export function cronjobWebhooks(): WebhookDefinition[] {
  return [
    { type: 'mutating', resource: CronJobs, handler: defaulter(CronJobs, defaultCronJob) },
    {
      type: 'validating',
      resource: CronJobs,
      handler: validator(CronJobs, { create: validateCronJob, update: (obj) => validateCronJob(obj) }),
    },
  ];
}
