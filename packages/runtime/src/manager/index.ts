/**
 * @module @opkit/runtime/manager
 * The operator process beyond `Manager`, `ManagerError` and `settings` (in `@opkit/runtime`): runnables, leader
 * election, the flag parser's parts (with `parseBindAddress` and `metricsServingSettings`, which read a server's address
 * and the metrics endpoint's settings as the manager does, for tools that start an operator), the logger
 * (`createLogger`, `silentLogger`, its options), and the metrics endpoint's authentication (its certificates come from
 * `@opkit/runtime/tls`). Sharding's settings (`ShardingSettings`) are `@opkit/runtime/sharding`.
 */
export { parseBindAddress } from '../internal/address.ts';
export {
  createLogger,
  type LogFields,
  type Logger,
  type LoggerOptions,
  type LogLevel,
  silentLogger,
} from '../logger.ts';
export { VERSION } from '../version.ts';
export { type LeaderCallbacks, type LeaderElectionOptions, LeaderElector, microTime } from './leader.ts';
export type { LeaderElectionSettings, Runnable } from './manager.ts';
export { MetricsAuthError, type MetricsAuthErrorCode } from './metricsauth.ts';
export type { MetricsServingOptions } from './metricsserving.ts';
export {
  type Flag,
  type Flags,
  type FlagType,
  type FlagValues,
  metricsServingSettings,
  parseDuration,
  parseSettings,
  SETTINGS_HELP,
  type Settings,
  type SettingsSpec,
  settingsFromArgs,
  settingsHelp,
} from './settings.ts';
