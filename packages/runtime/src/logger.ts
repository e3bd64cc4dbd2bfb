/**
 * @module logger
 * Structured logging. `Logger` is the small interface the runtime logs through — `(fields, message)` per level and
 * `child(bindings)` — which a pino logger satisfies as is. `createLogger()` makes a pino logger: JSON lines by default,
 * a readable one-line format when `pretty` is set (development). `silentLogger` discards everything.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';

/** Structured fields of a log entry (`{ request: 'ns/name', err: message }`). */
export type LogFields = Record<string, unknown>;

/**
 * The logger the runtime logs through: `(fields, message)` per level, and `child` for bound fields. A pino logger
 * satisfies it as is.
 */
export interface Logger {
  /** Logs at debug level (off unless the level is `debug`). */
  debug(fields: LogFields, message: string): void;
  /** Logs at info level. */
  info(fields: LogFields, message: string): void;
  /** Logs at warn level: something went wrong and was handled. */
  warn(fields: LogFields, message: string): void;
  /** Logs at error level: something failed. */
  error(fields: LogFields, message: string): void;
  /** A logger that adds `bindings` to every entry (e.g. `{ controller: 'appservice' }`). */
  child(bindings: LogFields): Logger;
}

/** The least severe level logged; `silent` logs nothing. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

/** Options of `createLogger`. */
export interface LoggerOptions {
  /** The least severe level logged (default `info`). */
  readonly level?: LogLevel;
  /** One readable line per entry instead of JSON (for a terminal). */
  readonly pretty?: boolean;
  /** Where to write (default stderr). */
  readonly destination?: NodeJS.WritableStream;
  /** A `name` field on every entry. */
  readonly name?: string;
}

/** A pino logger writing JSON lines (or, with `pretty`, one readable line per entry) to stderr or `destination`. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const destination = options.destination ?? process.stderr;
  const stream = options.pretty ? prettyStream(destination) : destination;
  return pino(
    {
      level: options.level ?? 'info',
      // pino puts `name` in `base`; a null base (no pid, no hostname) would drop it too
      base: options.name ? { name: options.name } : null,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    stream,
  );
}

/** Formats pino's JSON lines as `time LEVEL message key=value …`. */
function prettyStream(out: NodeJS.WritableStream): NodeJS.WritableStream {
  return new Writable({
    decodeStrings: false, // pino writes whole lines as strings: take them as they are
    write(chunk: string | Buffer, _encoding, done) {
      for (const line of String(chunk).split('\n')) {
        if (!line) continue;
        try {
          const { time, level, msg, ...rest } = JSON.parse(line) as Record<string, unknown>;
          const fields = Object.entries(rest)
            .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
            .join(' ');
          out.write(
            `${String(time).slice(11, 23)} ${String(level).toUpperCase().padEnd(5)} ${String(msg)}${fields ? ` ${fields}` : ''}\n`,
          );
        } catch {
          out.write(`${line}\n`);
        }
      }
      done();
    },
  });
}

const noop = () => {};
/** A logger that discards everything (the default where no logger is given). */
export const silentLogger: Logger = {
  debug: noop,
  info: noop,
  warn: noop,
  error: noop,
  child: () => silentLogger,
};
