import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isHeld, nextStep, type ShardPhase, type ShardStep } from './plan.ts';

const ME = 'me';

/** [phase, fence holder (undefined: no fence), owner, holder dead, listed since our write, step] */
type Row = [ShardPhase, string | undefined, string | undefined, boolean, boolean, ShardStep];

const ROWS: Row[] = [
  // a hand-off under way is never interrupted, and a list older than our last write decides nothing
  ['acquiring', '', ME, false, true, 'none'],
  ['starting', ME, 'b', false, true, 'none'],
  ['releasing', ME, 'b', false, true, 'none'],
  ['freeing', ME, ME, false, true, 'none'],
  ['dropping', 'x', ME, true, true, 'none'],
  ['held', 'x', ME, false, false, 'none'],
  ['free', '', ME, false, false, 'none'],
  // held here
  ['held', ME, ME, false, true, 'none'],
  ['held', ME, 'b', false, true, 'release'],
  ['held', ME, undefined, false, true, 'release'],
  ['held', 'x', ME, false, true, 'drop'],
  ['held', 'x', ME, true, true, 'drop'],
  ['held', '', ME, false, true, 'drop'],
  ['held', undefined, ME, false, true, 'drop'],
  // not held here, and ours to own
  ['free', undefined, ME, false, true, 'acquire'],
  ['free', '', ME, false, true, 'acquire'],
  ['free', ME, ME, false, true, 'acquire'],
  ['free', 'x', ME, true, true, 'acquire'],
  ['free', 'x', ME, false, true, 'none'],
  // not ours to own
  ['free', ME, 'b', false, true, 'free'],
  ['free', ME, undefined, false, true, 'free'],
  ['free', 'x', 'b', true, true, 'free-dead'],
  ['free', 'x', undefined, true, true, 'free-dead'],
  ['free', 'x', 'b', false, true, 'none'],
  ['free', 'b', 'b', false, true, 'none'],
  ['free', '', 'b', false, true, 'none'],
  ['free', undefined, 'b', true, true, 'none'],
];

test('nextStep: every phase, fence, owner and judgement of the holder, as a table', () => {
  for (const [phase, holder, owner, dead, listedSinceWrite, want] of ROWS) {
    const asked: string[] = [];
    const got = nextStep({
      phase,
      holder,
      owner,
      me: ME,
      holderDead: () => {
        asked.push(holder ?? '');
        return dead;
      },
      listedSinceWrite,
    });
    assert.equal(got, want, `${phase}, fence ${holder}, owner ${owner}, dead ${dead}, listed ${listedSinceWrite}`);
    // the judgement of a holder is asked only of another holder (asking records an absent one)
    for (const h of asked) assert.ok(h !== '' && h !== ME, `asked whether ${h || '""'} is dead`);
  }
});

test('isHeld: starting, held and releasing count as held here', () => {
  const held = (['free', 'acquiring', 'starting', 'held', 'releasing', 'freeing', 'dropping'] as const).filter(isHeld);
  assert.deepEqual(held, ['starting', 'held', 'releasing']);
});
