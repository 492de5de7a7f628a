/**
 * The schema of a database as its catalogs describe it, one line per fact, in one query: what two databases (or
 * one database at two moments) must share to have the same schema. Names, never OIDs, so that a table dropped
 * and created again gives the same lines.
 *
 * Covered, in every schema but PostgreSQL's own: relations (kind, persistence, options, row security, replica
 * identity, privileges); the columns of tables, views and composite types, by their place among the columns
 * that exist (type with modifier, NOT NULL, default, identity, generated, collation, storage, compression);
 * indexes (definition, valid, ready, clustered); constraints (definition, enforced, deferrable, deferred,
 * validated, not inherited); functions (signature, result and privileges as `function`; the hash of
 * `pg_get_functiondef`, which is language, volatility, settings and body too, as `function text`); triggers (definition, enabled); views (the hash of
 * their definition); rules; types (enum labels, domains' base types, defaults and NOT NULL); sequences
 * (parameters, owning column); extensions (version, schema); policies; comments; and, as a net under these,
 * every object of the other catalogs (schemas, operators, collations, casts, statistics, event triggers,
 * publications, text search, foreign servers, …) by its description, extensions' members aside.
 *
 * Left out, on purpose: a composite type's or table's dropped attributes (`attisdropped`), which PostgreSQL
 * keeps as traces named `........pg.dropped.N........` and which no statement can see or use; the internal
 * triggers of foreign keys, named after OIDs (the constraint's line says whether it is enforced); data,
 * sequences' current values and statistics.
 */
export interface SchemaFact {
  /** What kind of fact: `relation`, `column`, `index`, `constraint`, `function`, `trigger`, … */
  kind: string;
  /** The object it is about (for a function, its schema and name). */
  name: string;
  detail: string;
}

const SNAPSHOT = `
WITH ns AS (
  SELECT oid FROM pg_namespace
   WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema'
),
ext AS (SELECT classid, objid FROM pg_depend WHERE deptype = 'e'),
rel AS (
  SELECT c.* FROM pg_class c
   WHERE c.relnamespace IN (SELECT oid FROM ns)
     AND NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_class'::regclass AND ext.objid = c.oid)
),
fn AS (
  SELECT p.* FROM pg_proc p
   WHERE p.pronamespace IN (SELECT oid FROM ns)
     AND NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_proc'::regclass AND ext.objid = p.oid)
)
SELECT kind, name, detail FROM (
  SELECT 'relation' AS kind, c.oid::regclass::text AS name,
         format('kind=%s persistence=%s options=%s rls=%s/%s replica_identity=%s acl=%s', c.relkind,
                c.relpersistence, c.reloptions, c.relrowsecurity, c.relforcerowsecurity, c.relreplident,
                c.relacl) AS detail
    FROM rel c
  UNION ALL
  SELECT 'column', c.oid::regclass::text || '#' || row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum),
         format('%s %s not_null=%s default=%s identity=%s generated=%s collation=%s storage=%s compression=%s acl=%s',
                a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, pg_get_expr(d.adbin, d.adrelid),
                a.attidentity, a.attgenerated, a.attcollation::regcollation, a.attstorage, a.attcompression,
                a.attacl)
    FROM pg_attribute a JOIN rel c ON c.oid = a.attrelid
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
   WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'p', 'v', 'm', 'c', 'f')
  UNION ALL
  SELECT 'index', c.oid::regclass::text,
         format('%s valid=%s ready=%s clustered=%s replica_identity=%s', pg_get_indexdef(i.indexrelid),
                i.indisvalid, i.indisready, i.indisclustered, i.indisreplident)
    FROM pg_index i JOIN rel c ON c.oid = i.indexrelid
  UNION ALL
  SELECT 'constraint', coalesce(con.conrelid::regclass::text, con.contypid::regtype::text) || ' ' || con.conname,
         format('%s enforced=%s deferrable=%s deferred=%s validated=%s no_inherit=%s', pg_get_constraintdef(con.oid),
                con.conenforced, con.condeferrable, con.condeferred, con.convalidated, con.connoinherit)
    FROM pg_constraint con
   WHERE con.connamespace IN (SELECT oid FROM ns)
  UNION ALL
  SELECT 'function', p.pronamespace::regnamespace::text || '.' || p.proname,
         format('(%s) returns %s kind=%s acl=%s', pg_get_function_identity_arguments(p.oid),
                pg_get_function_result(p.oid), p.prokind, p.proacl)
    FROM fn p
  UNION ALL
  SELECT 'function text', p.pronamespace::regnamespace::text || '.' || p.proname,
         CASE WHEN p.prokind = 'a' THEN 'aggregate' ELSE md5(pg_get_functiondef(p.oid)) END
    FROM fn p
  UNION ALL
  SELECT 'trigger', t.tgrelid::regclass::text || ' ' || t.tgname,
         format('%s enabled=%s', pg_get_triggerdef(t.oid), t.tgenabled)
    FROM pg_trigger t JOIN rel c ON c.oid = t.tgrelid
   WHERE NOT t.tgisinternal
  UNION ALL
  SELECT 'view', c.oid::regclass::text, md5(pg_get_viewdef(c.oid))
    FROM rel c WHERE c.relkind IN ('v', 'm')
  UNION ALL
  SELECT 'rule', r.ev_class::regclass::text || ' ' || r.rulename, md5(pg_get_ruledef(r.oid))
    FROM pg_rewrite r JOIN rel c ON c.oid = r.ev_class
   WHERE r.rulename <> '_RETURN'
  UNION ALL
  SELECT 'type', t.oid::regtype::text,
         format('type=%s base=%s not_null=%s default=%s labels=%s', t.typtype,
                CASE WHEN t.typbasetype <> 0 THEN format_type(t.typbasetype, t.typtypmod) END, t.typnotnull,
                t.typdefault,
                (SELECT array_agg(e.enumlabel ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid))
    FROM pg_type t
   WHERE t.typnamespace IN (SELECT oid FROM ns)
     AND NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_type'::regclass AND ext.objid = t.oid)
  UNION ALL
  SELECT 'sequence', s.seqrelid::regclass::text,
         format('%s start=%s increment=%s min=%s max=%s cache=%s cycle=%s owned_by=%s', s.seqtypid::regtype,
                s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcache, s.seqcycle,
                (SELECT d.refobjid::regclass::text || '.' || a.attname
                   FROM pg_depend d
                   JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
                  WHERE d.classid = 'pg_class'::regclass AND d.objid = s.seqrelid
                    AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')))
    FROM pg_sequence s JOIN rel c ON c.oid = s.seqrelid
  UNION ALL
  SELECT 'extension', e.extname, format('version=%s schema=%s', e.extversion, e.extnamespace::regnamespace)
    FROM pg_extension e
  UNION ALL
  SELECT 'policy', p.polrelid::regclass::text || ' ' || p.polname,
         format('command=%s permissive=%s roles=%s using=%s check=%s', p.polcmd, p.polpermissive, p.polroles,
                pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid))
    FROM pg_policy p JOIN rel c ON c.oid = p.polrelid
  UNION ALL
  SELECT 'comment', pg_describe_object(d.classoid, d.objoid, d.objsubid), md5(d.description)
    FROM pg_description d
   WHERE d.objoid >= 16384
  UNION ALL
  -- The net under the facts above: every object of the other catalogs that is the database's own (in a schema
  -- of its own, or an OID from 16384 on; not an extension's), by its description.
  SELECT 'object', pg_describe_object(o.classid, o.objid, 0), ''
    FROM (
      SELECT 'pg_namespace'::regclass AS classid, oid AS objid FROM pg_namespace WHERE oid IN (SELECT oid FROM ns)
      UNION ALL SELECT 'pg_operator'::regclass, oid FROM pg_operator WHERE oprnamespace IN (SELECT oid FROM ns)
      UNION ALL SELECT 'pg_collation'::regclass, oid FROM pg_collation WHERE collnamespace IN (SELECT oid FROM ns)
      UNION ALL SELECT 'pg_conversion'::regclass, oid FROM pg_conversion WHERE connamespace IN (SELECT oid FROM ns)
      UNION ALL SELECT 'pg_opclass'::regclass, oid FROM pg_opclass WHERE opcnamespace IN (SELECT oid FROM ns)
      UNION ALL SELECT 'pg_opfamily'::regclass, oid FROM pg_opfamily WHERE opfnamespace IN (SELECT oid FROM ns)
      UNION ALL SELECT 'pg_statistic_ext'::regclass, oid FROM pg_statistic_ext
                 WHERE stxnamespace IN (SELECT oid FROM ns)
      UNION ALL SELECT 'pg_ts_config'::regclass, oid FROM pg_ts_config WHERE cfgnamespace IN (SELECT oid FROM ns)
      UNION ALL SELECT 'pg_ts_dict'::regclass, oid FROM pg_ts_dict WHERE dictnamespace IN (SELECT oid FROM ns)
      UNION ALL SELECT 'pg_ts_parser'::regclass, oid FROM pg_ts_parser WHERE prsnamespace IN (SELECT oid FROM ns)
      UNION ALL SELECT 'pg_ts_template'::regclass, oid FROM pg_ts_template
                 WHERE tmplnamespace IN (SELECT oid FROM ns)
      UNION ALL SELECT 'pg_event_trigger'::regclass, oid FROM pg_event_trigger
      UNION ALL SELECT 'pg_publication'::regclass, oid FROM pg_publication
      UNION ALL SELECT 'pg_cast'::regclass, oid FROM pg_cast WHERE oid >= 16384
      UNION ALL SELECT 'pg_language'::regclass, oid FROM pg_language WHERE oid >= 16384
      UNION ALL SELECT 'pg_foreign_data_wrapper'::regclass, oid FROM pg_foreign_data_wrapper
      UNION ALL SELECT 'pg_foreign_server'::regclass, oid FROM pg_foreign_server
      UNION ALL SELECT 'pg_am'::regclass, oid FROM pg_am WHERE oid >= 16384
      UNION ALL SELECT 'pg_transform'::regclass, oid FROM pg_transform
      UNION ALL SELECT 'pg_default_acl'::regclass, oid FROM pg_default_acl
    ) o
   WHERE NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = o.classid AND ext.objid = o.objid)
) facts
ORDER BY kind, name, detail`;

/** The schema of the database `query` reaches (a DataSource's or QueryRunner's `query`), one fact a line. */
export async function schemaSnapshot(query: (sql: string) => Promise<unknown>): Promise<SchemaFact[]> {
  return (await query(SNAPSHOT)) as SchemaFact[];
}

/** A fact as one line: `kind name: detail`. */
export const factLine = (fact: SchemaFact): string => `${fact.kind} ${fact.name}: ${fact.detail}`;

/** The lines of `a` that `b` does not have, and those of `b` that `a` does not have. */
export function schemaDifferences(a: string[], b: string[]): { onlyA: string[]; onlyB: string[] } {
  const inA = new Set(a);
  const inB = new Set(b);
  return { onlyA: a.filter((line) => !inB.has(line)), onlyB: b.filter((line) => !inA.has(line)) };
}
