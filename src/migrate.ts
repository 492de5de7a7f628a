import 'reflect-metadata';
import { leaveDatabase, prepareRuntime } from './bootstrap.js';

/** `npm run migration:run`: applies pending migrations to DATABASE_URL (or the embedded database). */
const { database, logger } = await prepareRuntime('migrate');
logger.info('schema is up to date');
await leaveDatabase(database, logger, { shortLived: true });
process.exit(0);
