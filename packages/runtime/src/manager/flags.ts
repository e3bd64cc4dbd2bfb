/**
 * @module manager/flags
 * An operator's own flags (`defineFlags`): their types, their `--help` rows, and how their values are read — from
 * the command line, else their environment variable, else their default. Flag names are the keys in kebab case
 * (`resyncPeriod` → `--resync-period`).
 *
 * Guarantees: a value is converted to its flag's type (`duration` to milliseconds) or rejected with a
 * `SettingsError` naming the flag or variable and what it accepts; an empty variable counts as unset.
 */

import { OpkitError } from '../errors.ts';

/** Why the settings could not be read. */
export type SettingsErrorCode =
  /** A flag or variable has a value it does not accept, a flag is unknown, or an operator flag is named like one of
   * the manager's: the message names it and what it accepts. */
  'InvalidSetting';

/**
 * A flag or environment variable with a value it does not accept, an unknown flag, or an operator flag named like one
 * of the manager's (code `InvalidSetting`); the message names it.
 */
export class SettingsError extends OpkitError<SettingsErrorCode> {
  override readonly name = 'SettingsError';

  constructor(message: string, options?: { cause?: unknown }) {
    super('InvalidSetting', message, options);
  }
}

/** `30s`, `2m`, `1h`, `500ms`, or a plain number of seconds → milliseconds. */
export function parseDuration(text: string, from = 'duration'): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new SettingsError(`${from}: "${text}" is not a duration like 30s, 2m or 500ms`);
  const n = Number(m[1]);
  const unit = m[2] ?? 's';
  return Math.round(n * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[unit as 'ms' | 's' | 'm' | 'h']);
}

/** The type of one operator flag. */
export type FlagType = 'string' | 'boolean' | 'integer' | 'duration';

type ValueOf<K extends FlagType> = K extends 'boolean' ? boolean : K extends 'string' ? string : number;

/** One flag an operator declares. */
export interface Flag<K extends FlagType = FlagType> {
  /**
   * The value's type: `string`, `boolean`, `integer`, or `duration` (`30s`, `2m`, `500ms`; parsed to milliseconds).
   */
  readonly type: K;
  /** One line for --help. */
  readonly help: string;
  /** An environment variable that sets it when the flag is absent. */
  readonly env?: string;
  /** The value when neither is given (else `undefined`); a duration's in milliseconds. */
  readonly default?: ValueOf<K>;
  /** For --help, e.g. `DUR` or `NAME` (default: from the type). */
  readonly placeholder?: string;
}

/** An operator's flags by key; `--<key in kebab case>` on the command line. */
export type Flags = Readonly<Record<string, Flag>>;

/** The parsed values of `F`: typed by each flag's type, `undefined` when absent and without a default. */
export type FlagValues<F extends Flags> = {
  readonly [K in keyof F]: F[K] extends { readonly default: unknown }
    ? ValueOf<F[K]['type']>
    : ValueOf<F[K]['type']> | undefined;
};

/** Declares an operator's flags, keeping their literal types (a typed identity). */
export function defineFlags<const F extends Flags>(flags: F): F {
  return flags;
}

/** The flag name of an operator flag's key (`resyncPeriod` → `resync-period`). */
export const kebab = (key: string): string => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** The `parseArgs` options of `flags`: booleans as booleans, every other type as a string to convert. */
export function parseArgsOptions(flags: Flags): Record<string, { type: 'string' | 'boolean' }> {
  return Object.fromEntries(
    Object.entries(flags).map(([k, f]) => [kebab(k), { type: f.type === 'boolean' ? 'boolean' : 'string' }] as const),
  );
}

/** The `--help` rows of `flags`: the flag and its placeholder, its help, its default and variable. */
export function flagHelpRows(flags: Flags): string[] {
  return Object.entries(flags).map(([key, f]) => {
    const arg =
      f.type === 'boolean' ? '' : ` ${f.placeholder ?? { string: 'VALUE', integer: 'N', duration: 'DUR' }[f.type]}`;
    const extra = [f.default !== undefined ? `default ${String(f.default)}` : '', f.env ? `env ${f.env}` : ''].filter(
      Boolean,
    );
    return `  ${`--${kebab(key)}${arg}`.padEnd(35)}${f.help}${extra.length > 0 ? ` (${extra.join('; ')})` : ''}`;
  });
}

/** The values of `flags`: given on the command line (`values`, by flag name), else by variable, else the default. */
export function flagValues(
  flags: Flags,
  values: Readonly<Record<string, string | boolean | undefined>>,
  env: NodeJS.ProcessEnv,
): Record<string, string | boolean | number | undefined> {
  const own: Record<string, string | boolean | number | undefined> = {};
  for (const [key, f] of Object.entries(flags)) {
    const flag = `--${kebab(key)}`;
    const given = values[kebab(key)];
    const fromEnv = f.env !== undefined && env[f.env] !== undefined && env[f.env] !== '' ? env[f.env] : undefined;
    const raw = given ?? fromEnv;
    const from = given !== undefined ? flag : (f.env ?? flag);
    own[key] = raw === undefined ? f.default : convert(f.type, raw, from);
  }
  return own;
}

function convert(type: FlagType, raw: string | boolean, from: string): string | boolean | number {
  if (typeof raw === 'boolean') return raw;
  switch (type) {
    case 'boolean':
      if (!/^(true|false|1|0)$/i.test(raw)) throw new SettingsError(`${from}: "${raw}" is not true or false`);
      return /^(true|1)$/i.test(raw);
    case 'integer': {
      const n = Number(raw);
      if (!Number.isInteger(n)) throw new SettingsError(`${from}: "${raw}" is not a whole number`);
      return n;
    }
    case 'duration':
      return parseDuration(raw, from);
    case 'string':
      return raw;
  }
}
