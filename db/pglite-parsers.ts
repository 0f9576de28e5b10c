// PGlite 0.4.6 copies its whole type-parser table on every query (`{ ...this.parsers, ...options.parsers }`
// in parseResults). At start it adds a parser for every array type in pg_type: ~320 entries keyed by type
// OID up to ~12,800 (arrays of system catalogs and information_schema rows), more once our tables' row
// types exist (OIDs >= 16384). V8 copies such sparse integer keys slowly: ~0.2-0.4 ms a query, about
// half of the CPU time of a one-row select (measured: select 1 478 -> 202 us of CPU, by primary key
// 518 -> 360 us). Keeping the base parsers and the arrays of built-in types below OID 4096 (int4[],
// text[], uuid[], jsonb[], timestamptz[], bytea[], ... every array of a scalar type an application
// uses) makes that copy ~4 us. What changes: a column that is an array of a row type or of a rarer
// built-in (regrole[], multirange[]) arrives as PostgreSQL's text form ('{...}') instead of an array.
import type { PGlite } from '@electric-sql/pglite';

const KEEP_ARRAYS_BELOW_OID = 4096;

export async function trimArrayParsers(pglite: PGlite): Promise<void> {
  const result = await pglite.query<{ oid: number }>(
    `select oid::int as oid from pg_catalog.pg_type where typcategory = 'A' and oid >= ${KEEP_ARRAYS_BELOW_OID}`,
  );
  const drop = new Set(result.rows.map((row) => String(row.oid)));
  pglite.parsers = Object.fromEntries(Object.entries(pglite.parsers).filter(([key]) => !drop.has(key)));
}
