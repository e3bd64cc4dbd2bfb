/**
 * @opkit/runtime/testing — helpers for an operator's own tests, kept out of the main entry so production code never
 * loads them: fuzzed conversion round trips for kinds with several versions (`checkRoundTrip`) and the generators
 * behind them (`arbitraryObject`, `arbitraryFor`, fast-check arbitraries).
 */
export { arbitraryFor, arbitraryObject, checkRoundTrip, type RoundTripOptions } from './crd/roundtrip.ts';
