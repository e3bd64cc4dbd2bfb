/**
 * @module version
 * The runtime's version, sent in the user agent (`opkit/<version>`). A test checks it equals package.json's.
 */
export const VERSION = '0.1.0';
