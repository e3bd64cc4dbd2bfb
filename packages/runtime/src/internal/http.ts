/**
 * @module internal/http
 * `node:http` for the runtime's own use, as its CommonJS exports. An ESM `import … from 'node:http'` builds the
 * module's namespace by reading every export, and since Node 22 three of them (`WebSocket`, `CloseEvent`,
 * `MessageEvent`) are getters that load undici (nodejs/node#57649), which an operator never uses: measured on Node 24,
 * 13 MiB of RSS in a bare process, and in the AppService operator's start 32 ms and 4 MiB (docs/benchmarks.md).
 * `process.getBuiltinModule` hands the same module without reading them.
 * Types still come from `import type … from 'node:http'`, which loads nothing.
 */
export const http: typeof import('node:http') = process.getBuiltinModule('node:http');
