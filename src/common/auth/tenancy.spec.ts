import { NotFoundError } from '../errors/domain-errors.js';
import type { Principal } from './principal.js';
import { assertReachable, canReach, tenantWhere, tenantWhereAnd } from './tenancy.js';

interface Row {
  appId: string;
  id: string;
  ownerId: string;
}

const client: Principal = { kind: 'client', appId: 'app-a' };
const subject: Principal = { kind: 'subject', appId: 'app-a', subject: 'user-1' };

describe('tenancy', () => {
  it('scopes a client to its application and a subject to what it owns', () => {
    expect(tenantWhere<Row>(client, ['ownerId'])).toEqual([{ appId: 'app-a' }]);
    expect(tenantWhere<Row>(subject, ['ownerId'])).toEqual([{ appId: 'app-a', ownerId: 'user-1' }]);
    expect(tenantWhere<Row>(subject, ['id', 'ownerId'])).toEqual([
      { appId: 'app-a', id: 'user-1' },
      { appId: 'app-a', ownerId: 'user-1' },
    ]);
    expect(tenantWhere<Row>(subject, [])).toEqual([{ appId: 'app-a' }]);
  });

  it('never lets a condition overwrite the subject scope', () => {
    expect(tenantWhereAnd<Row>(subject, ['id'], { id: 'user-1' })).toEqual([
      { appId: 'app-a', id: 'user-1' },
    ]);
    expect(tenantWhereAnd<Row>(subject, ['id'], { id: 'user-2' })).toBeUndefined();
    expect(tenantWhereAnd<Row>(client, ['id'], { id: 'user-2' })).toEqual([{ appId: 'app-a', id: 'user-2' }]);
    expect(tenantWhereAnd<Row>(subject, ['id', 'ownerId'], { id: 'account-9' })).toEqual([
      { appId: 'app-a', ownerId: 'user-1', id: 'account-9' },
    ]);
  });

  it('answers reachability with 404, never 403', () => {
    expect(canReach(client, { appId: 'app-a', ownerIds: ['x'] })).toBe(true);
    expect(canReach(client, { appId: 'app-b', ownerIds: [] })).toBe(false);
    expect(canReach(subject, { appId: 'app-a', ownerIds: ['user-1'] })).toBe(true);
    expect(canReach(subject, { appId: 'app-a', ownerIds: ['user-2'] })).toBe(false);
    expect(() => assertReachable(subject, { appId: 'app-a', ownerIds: ['user-2'] }, 'r-1')).toThrow(
      NotFoundError,
    );
    expect(() => assertReachable(client, null, 'r-1')).toThrow(NotFoundError);
  });
});
