import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CrdLedger } from './crd-sync.ts';

const crd = (uid: string, plural: string, established = true, served = [true]) => ({
  metadata: { uid, name: `${plural}.example.com` },
  spec: {
    group: 'example.com',
    names: { plural },
    versions: served.map((s, i) => ({ name: `v${i + 1}`, served: s })),
  },
  status: { conditions: [{ type: 'Established', status: established ? 'True' : 'False' }] },
});

test('the ledger: an Established CRD the controller-manager did not have at its start is pending until the next start', () => {
  const ledger = new CrdLedger();
  ledger.started();
  ledger.apply('ADDED', crd('1', 'widgets', false));
  assert.deepEqual(ledger.pending(), [], 'not Established yet');
  ledger.apply('MODIFIED', crd('1', 'widgets'));
  assert.deepEqual(ledger.pending(), [
    { uid: '1', name: 'widgets.example.com', plural: 'widgets', groupVersion: 'example.com/v1' },
  ]);
  ledger.apply('ADDED', crd('2', 'gadgets', true, [false, true]));
  assert.deepEqual(
    ledger.pending().map((c) => c.groupVersion),
    ['example.com/v1', 'example.com/v2'],
    'discovery lists the first served version',
  );
  ledger.started();
  assert.deepEqual(ledger.pending(), []);
  ledger.apply('MODIFIED', crd('1', 'widgets'));
  assert.deepEqual(ledger.pending(), [], 'a change is not a new CRD');
  ledger.apply('DELETED', crd('1', 'widgets'));
  assert.deepEqual(ledger.pending(), [], 'a deletion restarts nothing');
  ledger.apply('ADDED', crd('3', 'widgets'));
  assert.deepEqual(
    ledger.pending().map((c) => c.uid),
    ['3'],
    'installed again: a new uid',
  );
});

test('the ledger: a list replaces what is established (a CRD installed while the watch was down is pending)', () => {
  const ledger = new CrdLedger();
  ledger.apply('ADDED', crd('1', 'widgets'));
  ledger.started();
  ledger.reset([crd('1', 'widgets'), crd('2', 'gadgets'), { metadata: { name: 'not-a-crd' } }]);
  assert.deepEqual(
    ledger.pending().map((c) => c.uid),
    ['2'],
  );
  ledger.reset([]);
  assert.deepEqual(ledger.pending(), []);
});
