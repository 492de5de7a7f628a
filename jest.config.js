/** Jest in ESM mode (Nest 12 and jose 6 are ESM-only): see docs/decisions/0001-esm-and-tooling.md. */
const common = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    // The package's subpath imports (package.json "imports"), read from the sources as tsc reads them.
    '^#(common|config|modules)/(.*)\\.js$': '<rootDir>/src/$1/$2',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }],
  },
  globalSetup: '<rootDir>/test/support/global-setup.mjs',
  globalTeardown: '<rootDir>/test/support/global-teardown.mjs',
  testTimeout: 60_000,
};

export default {
  ...common,
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.e2e-spec.ts'],
  // Suites about Redis itself (stopping it under the service) run with the Redis suites (`npm run test:redis`),
  // so that `npm test` needs no redis-server.
  testPathIgnorePatterns:
    process.env.TEST_QUEUE_BACKEND === 'redis'
      ? ['/node_modules/']
      : ['/node_modules/', '/test/redis-faults\\.'],
  // Two cores: two workers keep the suite fast without starving the database server.
  maxWorkers: 2,
  // Every failure printed again at the end of the run, whatever the number of suites: CI keeps the tail of
  // a long log, and a failure's message must be in it.
  reporters: [['default', { summaryThreshold: 0 }]],
};
