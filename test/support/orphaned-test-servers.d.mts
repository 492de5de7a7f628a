/** The prefix of the temporary folders the global setup runs its embedded server in (orphaned-test-servers.mjs). */
export declare const TEST_SERVER_PREFIX: string;
/** Stops and removes the servers earlier runs left behind in `parent`; answers the folders removed. */
export declare function sweepOrphanedTestServers(parent?: string, now?: number): Promise<string[]>;
