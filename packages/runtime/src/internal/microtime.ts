/**
 * @module internal/microtime
 * The API's MicroTime (a Lease's `renewTime`, an Event's `eventTime`): RFC 3339 with exactly six fractional digits.
 */

/** RFC 3339 with microseconds, as the API's MicroTime requires. */
export function microTime(date: Date): string {
  return date.toISOString().replace(/Z$/, '000Z');
}
