import { carriesOperatorToken } from './operator-credentials.js';

describe('carriesOperatorToken', () => {
  const TOKEN = 'operator-token with spaces & symbols!';
  const basic = (user: string, password: string) =>
    `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

  it('accepts the token after the Bearer scheme, in any case and after several spaces', () => {
    expect(carriesOperatorToken(`Bearer ${TOKEN}`, TOKEN)).toBe(true);
    expect(carriesOperatorToken(`bearer ${TOKEN}`, TOKEN)).toBe(true);
    expect(carriesOperatorToken(`BEARER   ${TOKEN}`, TOKEN)).toBe(true);
  });

  it('refuses another token, a longer or shorter one, and no scheme', () => {
    expect(carriesOperatorToken(`Bearer ${TOKEN}x`, TOKEN)).toBe(false);
    expect(carriesOperatorToken(`Bearer ${TOKEN.slice(1)}`, TOKEN)).toBe(false);
    expect(carriesOperatorToken(`Bearer ${TOKEN} `, TOKEN)).toBe(false);
    expect(carriesOperatorToken(TOKEN, TOKEN)).toBe(false);
    expect(carriesOperatorToken(`Bearer${TOKEN}`, TOKEN)).toBe(false);
    expect(carriesOperatorToken(undefined, TOKEN)).toBe(false);
  });

  it('takes the Basic password only where allowed', () => {
    expect(carriesOperatorToken(basic('operator', TOKEN), TOKEN, { basic: true })).toBe(true);
    expect(
      carriesOperatorToken(basic('operator', TOKEN).replace('Basic', 'basic'), TOKEN, { basic: true }),
    ).toBe(true);
    expect(carriesOperatorToken(basic('operator', TOKEN), TOKEN)).toBe(false);
    expect(carriesOperatorToken(basic('operator', 'wrong'), TOKEN, { basic: true })).toBe(false);
  });

  it('matches nothing when no token is configured', () => {
    expect(carriesOperatorToken('Bearer ', undefined)).toBe(false);
    expect(carriesOperatorToken('Bearer ', '')).toBe(false);
    expect(carriesOperatorToken(basic('operator', ''), '', { basic: true })).toBe(false);
  });
});
