import { accessToken, registerClient, type TestClient } from './auth.js';
import { startTestApp, type TestApp, type TestAppOptions } from './test-app.js';

export interface TwoApplications {
  t: TestApp;
  appA: TestClient;
  appB: TestClient;
  tokenA: string;
  tokenB: string;
}

/**
 * The test app with two registered applications, `<prefix>-a` and `<prefix>-b`, and a client token of
 * each: the suites that check tenancy act as A and look from B.
 */
export async function startWithTwoApplications(
  prefix: string,
  options?: TestAppOptions,
): Promise<TwoApplications> {
  const t = await startTestApp(options);
  const appA = await registerClient(t.app, `${prefix}-a`);
  const appB = await registerClient(t.app, `${prefix}-b`);
  const tokenA = await accessToken(t.http, appA);
  const tokenB = await accessToken(t.http, appB);
  return { t, appA, appB, tokenA, tokenB };
}
