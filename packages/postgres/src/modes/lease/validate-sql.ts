import type { Grant } from '@deadbolt/core/adapter';

/**
 * `validate` for 'postgres:lease', in one statement for any number of grants: a grant holds while
 * its row carries its token and its lease end is not past on the server's clock (the same test as
 * renew's). A lock or a term is a row of the lock table (owner = token); a read, write or permit
 * hold a row of the holders table (kinds-sql.ts). Table names are built as leaseSql and kindsSql
 * build them.
 */
export function leaseValidateSql(table: string, schema?: string): string {
  const qualifier = schema === undefined ? '' : `"${schema}".`;
  const L = `${qualifier}"${table}"`;
  const H = `${qualifier}"${table.slice(0, 55)}_holders"`;
  return `SELECT u.n, (EXISTS (SELECT 1 FROM ${L} l WHERE l.key = u.key AND l.owner = u.token AND l.expires_at >= now())
      OR EXISTS (SELECT 1 FROM ${H} h WHERE h.key = u.key AND h.token = u.token AND h.expires_at >= now())) AS held
    FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(key, token, n) ORDER BY u.n`;
}

/** The statement's parameters for `grants`. */
export function leaseValidateParams(grants: readonly Grant[]): [string[], string[]] {
  return [grants.map((grant) => grant.key), grants.map((grant) => grant.token)];
}
