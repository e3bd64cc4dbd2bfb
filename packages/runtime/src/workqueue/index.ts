/**
 * @module workqueue
 * The controller work queue: a deduplicating, delaying, rate-limited FIFO of keys with client-go's dirty/processing
 * semantics (a key is never processed by two workers at once, and an add during processing is not lost), plus the
 * rate limiters that pace retries and the injectable clock both run on.
 * Guarantees and caveats: see each module (clock, ratelimiter, queue).
 */
export { type Clock, FakeClock, realClock, type Timer } from './clock.ts';
export { type Handed, LOW_PRIORITY, WorkQueue, type WorkQueueMetrics, type WorkQueueOptions } from './queue.ts';
export {
  BucketRateLimiter,
  type ControllerRateLimiterOptions,
  defaultControllerRateLimiter,
  ItemExponentialRateLimiter,
  MaxOfRateLimiter,
  type RateLimiter,
} from './ratelimiter.ts';
