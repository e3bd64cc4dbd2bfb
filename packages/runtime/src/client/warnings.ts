/**
 * @module client/warnings
 * The apiserver's warnings: the `Warning: 299 - "text"` headers of its answers (an unknown field under
 * `fieldValidation: 'Warn'`, a deprecated API version, an admission policy's or webhook's warning), read from each
 * response and handed to the client's `onWarning`, as client-go hands them to its `WarningHandler`; and the handler a
 * manager gives its client, which logs each distinct text once, as controller-runtime's deduplicating
 * `KubeAPIWarningLogger` does.
 *
 * Guarantees:
 * - `warningsOf` returns the text of every warning with code 299 (the only one the apiserver sends) of every
 *   `Warning` header, in order, unescaped (`\"` and `\\` in the quoted text), whatever it contains (commas, UTF-8
 *   text, which Node's parser hands over as Latin-1 and which is decoded back); a header it cannot parse is skipped
 *   from the first malformed byte on, never thrown.
 * - `onWarning` is called once per warning per response, for every request, watches included; a handler that throws
 *   is not the request's failure (its error is dropped).
 * - `loggedOnce` logs a text (with the request that drew it first) at warn level the first time it is seen, and then
 *   never again, up to `max` distinct texts remembered (default 1,024; the oldest is forgotten first).
 */
import type { IncomingMessage } from 'node:http';
import type { Logger } from '../logger.ts';

/** Hears each warning the apiserver answers with: its text, and the request (`METHOD path`) that drew it. */
export type WarningHandler = (text: string, request: string) => void;

/** The texts of the 299 warnings in `Warning` header values (each may list several, comma-separated). */
export function warningsOf(headers: readonly string[] | undefined): string[] {
  const out: string[] = [];
  for (const raw of headers ?? []) {
    const header = Buffer.from(raw, 'latin1').toString('utf8'); // Node reads header bytes as Latin-1; they are UTF-8
    let i = 0;
    const skip = (re: RegExp) => {
      while (i < header.length && re.test(header[i] as string)) i++;
    };
    while (i < header.length) {
      skip(/[\s,]/);
      const code = /^(\d{3}) +[^ ]+ +"/.exec(header.slice(i));
      if (!code) break;
      i += code[0].length;
      let text = '';
      while (i < header.length && header[i] !== '"') {
        if (header[i] === '\\' && i + 1 < header.length) i++;
        text += header[i];
        i++;
      }
      if (header[i] !== '"') break; // the quoted text never ends: malformed from here on
      i++;
      skip(/ /);
      if (header[i] === '"') i = header.indexOf('"', i + 1) + 1 || header.length; // an optional quoted date
      if (code[1] === '299') out.push(text);
    }
  }
  return out;
}

/** Hands each warning of `res` to `handler` (never throws). */
export function reportWarnings(res: IncomingMessage, handler: WarningHandler, request: string): void {
  // `headers` (computed for every answer anyway) joins repeated Warning headers with ", ", which warningsOf reads as
  // one list; `headersDistinct` would build a second header object per answer
  const header = res.headers.warning;
  for (const text of warningsOf(header === undefined ? undefined : [header])) {
    try {
      handler(text, request);
    } catch {
      // a handler's failure is not the request's
    }
  }
}

/** A `WarningHandler` that logs each distinct text once, at warn level (see the module comment). */
export function loggedOnce(log: Logger, max = 1_024): WarningHandler {
  const seen = new Set<string>();
  return (text, request) => {
    if (seen.has(text)) return;
    seen.add(text);
    if (seen.size > max) seen.delete(seen.values().next().value as string);
    log.warn({ request }, `the apiserver warns: ${text}`);
  };
}
