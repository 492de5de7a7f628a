import type pg from 'pg';

/** A node of `EXPLAIN (ANALYZE, FORMAT JSON)`, with the fields the tests read. */
export interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Heap Fetches'?: number;
  Plans?: PlanNode[];
}

/** The plan's nodes, the root first. */
export const flattenPlan = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(flattenPlan)];

/**
 * A named statement's text (parameters `$n`) prepared on `db` and run with `values` under `mode`, as
 * `EXPLAIN ANALYZE`: the plan a connection would use with forced custom or forced generic plans (decision 0048).
 */
export async function preparedPlan(
  db: pg.Client,
  text: string,
  values: readonly unknown[],
  mode: 'force_custom_plan' | 'force_generic_plan',
): Promise<PlanNode[]> {
  await db.query(`SET plan_cache_mode = ${mode}`);
  await db.query('DEALLOCATE ALL');
  await db.query(`PREPARE planned AS ${text}`);
  const literals = values.map((value) =>
    value === null ? 'NULL' : db.escapeLiteral(value instanceof Date ? value.toISOString() : String(value)),
  );
  const { rows } = await db.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
    `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE planned(${literals.join(', ')})`,
  );
  return flattenPlan(rows[0]['QUERY PLAN'][0].Plan);
}

/** The rows the plan read from `table`: returned or filtered out, over every loop. */
export const rowsRead = (nodes: PlanNode[], table: string): number =>
  nodes
    .filter((node) => node['Relation Name'] === table)
    .reduce(
      (sum, node) =>
        sum +
        ((node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0)) * (node['Actual Loops'] ?? 1),
      0,
    );
