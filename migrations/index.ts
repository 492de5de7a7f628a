import { Foundation1763900000000 } from './1763900000000-Foundation.js';
import { WebhookOutbox1763900100000 } from './1763900100000-WebhookOutbox.js';

/** Every migration, oldest first. Append new ones; never edit one that has landed. */
export const MIGRATIONS = [Foundation1763900000000, WebhookOutbox1763900100000];
