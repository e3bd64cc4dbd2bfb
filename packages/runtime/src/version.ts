/**
 * @module version
 * The runtime's version, sent in the user agent (`opkit/<version>`). A test checks it equals package.json's.
 */
/** The version of `@opkit/runtime` (as in its package.json), sent in the user agent `opkit/<version>`. */
export const VERSION = '0.1.0';
