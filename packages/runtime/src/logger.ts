/**
 * @module logger
 * Structured logging. `Logger` is the small interface the runtime logs through — `(fields, message)` per level and
 * `child(bindings)` — which a pino logger satisfies as is. `createLogger()` makes a pino logger: JSON lines by default,
 * a readable one-line format when `pretty` is set (development). `silentLogger` discards everything.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(fields: LogFields, message: string): void;
  info(fields: LogFields, message: string): void;
  warn(fields: LogFields, message: string): void;
  error(fields: LogFields, message: string): void;
  child(bindings: LogFields): Logger;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export interface LoggerOptions {
  readonly level?: LogLevel;
  /** One readable line per entry instead of JSON (for a terminal). */
  readonly pretty?: boolean;
  /** Where to write (default stderr). */
  readonly destination?: NodeJS.WritableStream;
  readonly name?: string;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const destination = options.destination ?? process.stderr;
  const stream = options.pretty ? prettyStream(destination) : destination;
  return pino(
    {
      level: options.level ?? 'info',
      ...(options.name ? { name: options.name } : {}),
      base: null,
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
export const silentLogger: Logger = {
  debug: noop,
  info: noop,
  warn: noop,
  error: noop,
  child: () => silentLogger,
};
