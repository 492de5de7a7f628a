import { LostCall } from './transfer-writer.js';
import type { RowWithReversal } from './transfer-views.js';

/** A written row as the check reads it: only the keys answerFor looks at matter here. */
const row = (id: string, ownerId: string) => ({ id, owner_id: ownerId }) as RowWithReversal;

describe('LostCall.answerFor: the row a request of a lost call is answered with', () => {
  const userA = '0b6f0d0c-6d0a-4a8e-9a55-6f1c2d3e4f50';
  const userB = '7c1e2d3f-4a5b-4c6d-8e7f-8091a2b3c4d5';
  const lost = new LostCall(
    new Map([
      ['t1', row('t1', userA)],
      ['t2', row('t2', userB)],
    ]),
    new Error('Connection terminated unexpectedly'),
  );

  it('answers an application token with the row written under its id', () => {
    expect(lost.answerFor('t1', null)).toMatchObject({ id: 't1' });
    expect(lost.answerFor('t2', null)).toMatchObject({ id: 't2' });
  });

  it('answers a user token only while the row still names that user as owner, in any case', () => {
    expect(lost.answerFor('t1', userA)).toMatchObject({ id: 't1' });
    expect(lost.answerFor('t1', userA.toUpperCase())).toMatchObject({ id: 't1' });
    // The account was moved to another owner after the call committed: no row, never the other user's data.
    expect(lost.answerFor('t2', userA)).toBeUndefined();
  });

  it('answers nothing for a request whose row was not written', () => {
    expect(lost.answerFor('t3', null)).toBeUndefined();
    expect(lost.answerFor('t3', userA)).toBeUndefined();
  });
});
