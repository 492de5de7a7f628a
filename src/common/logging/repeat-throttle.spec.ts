import { RepeatThrottle } from './repeat-throttle.js';

describe('RepeatThrottle', () => {
  it('logs the first occurrence, counts the next ones within the window, and logs again after it with the count', () => {
    let now = 1_000;
    const throttle = new RepeatThrottle(30_000, () => now);
    const logged: [string, number | undefined][] = [];
    const report = (key: string) => throttle.report(key, (fields) => logged.push([key, fields.suppressed]));

    report('webhooks');
    for (let i = 0; i < 5; i++) {
      now += 1_000;
      report('webhooks');
    }
    report('sms'); // another key has its own window
    expect(logged).toEqual([
      ['webhooks', undefined],
      ['sms', undefined],
    ]);

    now += 30_000;
    report('webhooks');
    report('webhooks');
    expect(logged).toEqual([
      ['webhooks', undefined],
      ['sms', undefined],
      ['webhooks', 5],
    ]);
  });
});
