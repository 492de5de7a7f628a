import { storedProviderId } from './sms-dispatch.service.js';

describe('storedProviderId', () => {
  it("keeps the SMSC's message id as given", () => {
    expect(storedProviderId('0a1b2c')).toBe('0a1b2c');
    expect(storedProviderId('sim-1')).toBe('sim-1');
  });

  it('stores an empty id as NULL: no receipt can match it, and it never collides with another', () => {
    expect(storedProviderId('')).toBeNull();
    expect(storedProviderId('   ')).toBeNull();
  });
});
