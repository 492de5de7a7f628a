/** A uuid in its usual text form, any version, either case: what PostgreSQL's uuid type takes. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
