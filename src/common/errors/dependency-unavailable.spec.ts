import { isDependencyUnavailable } from './dependency-unavailable.js';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isDependencyUnavailable', () => {
  it.each([
    ['a refused connection', withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432')],
    ['a reset connection', withCode('ECONNRESET')],
    ['connection failure (08006)', withCode('08006')],
    [
      'an administrator shutdown (57P01)',
      withCode('57P01', 'terminating connection due to administrator command'),
    ],
    ['a server starting up or stopping (57P03)', withCode('57P03', 'the database system is shutting down')],
    ['too many connections (53300)', withCode('53300')],
    ['pg: connection terminated', new Error('Connection terminated unexpectedly')],
    ['pg-pool: no connection in time', new Error('timeout exceeded when trying to connect')],
    [
      'TypeORM around one of them (driverError)',
      Object.assign(new Error('Query failed'), { driverError: withCode('57P01') }),
    ],
    ['a cause', new Error('wrapped', { cause: withCode('ECONNREFUSED') })],
  ])('%s: unavailable', (_label, error) => {
    expect(isDependencyUnavailable(error)).toBe(true);
  });

  it.each([
    [
      'a statement cancelled by its timeout (57014)',
      withCode('57014', 'canceling statement due to statement timeout'),
    ],
    ['a unique violation (23505)', withCode('23505')],
    ['a serialization failure (40001)', withCode('40001')],
    ['a database not accepting connections (55000, an operator choice)', withCode('55000')],
    ['a plain error', new Error('boom')],
    ['not an error', 'ECONNREFUSED'],
    ['nothing', undefined],
  ])('%s: not', (_label, error) => {
    expect(isDependencyUnavailable(error)).toBe(false);
  });
});
