/**
 * @module @opkit/runtime/manager
 * The operator process beyond `Manager` and `settings` (in `@opkit/runtime`): manager errors and runnables, leader
 * election, the flag parser's parts (with `parseBindAddress` and `metricsServingSettings`, which read a server's address
 * and the metrics endpoint's settings as the manager does, for tools that start an operator), and logging options, and
 * the metrics endpoint's authentication (its certificates come from `@opkit/runtime/tls`).
 */
export { parseBindAddress } from '../internal/address.ts';
export type { LogFields, LoggerOptions, LogLevel } from '../logger.ts';
export { VERSION } from '../version.ts';
export { type LeaderCallbacks, type LeaderElectionOptions, LeaderElector, microTime } from './leader.ts';
export { type LeaderElectionSettings, ManagerError, type ManagerErrorCode, type Runnable } from './manager.ts';
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
