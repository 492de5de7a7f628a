import { routeTemplateOf } from './principal.js';

describe('routeTemplateOf', () => {
  it('names the matched route as the OpenAPI document names the operation', () => {
    expect(
      routeTemplateOf({ method: 'PATCH', baseUrl: '', route: { path: '/v1/users/:uuid/kyc-data' } }),
    ).toBe('PATCH /v1/users/{uuid}/kyc-data');
    expect(routeTemplateOf({ method: 'POST', route: { path: '/v1/kyc/sessions/:uuid/steps/:step' } })).toBe(
      'POST /v1/kyc/sessions/{uuid}/steps/{step}',
    );
    expect(routeTemplateOf({ method: 'GET', baseUrl: '/v1', route: { path: '/audit' } })).toBe(
      'GET /v1/audit',
    );
  });
});
