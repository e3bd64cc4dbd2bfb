/**
 * @module client/builtins
 * The built-in kinds, for the runtime's own modules: the generated `Kind` constants and object types of
 * `@opkit/runtime/kinds` (packages/runtime/src/client/kinds/, from the pinned Kubernetes version's OpenAPI), re-exported.
 */
export * from './kinds/index.ts';
