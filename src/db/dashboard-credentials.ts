import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { Mode } from '../domain/types';
import { listedCredentialColumns, listedCredentialWithId } from './credentials';

/**
 * What the dashboard's Credentials page needs beyond src/db/credentials.ts (which the CLI uses):
 * each credential with its id, so that the page can revoke one without knowing its API key,
 * scoped to the signed-in application and the mode shown.
 */
const dashboardCredential = listedCredentialWithId;
export type DashboardCredential = z.infer<typeof dashboardCredential>;

const columns = sql.fragment`id, ${listedCredentialColumns}`;

export async function listModeCredentials(
  db: CommonQueryMethods,
  applicationId: string,
  mode: Mode,
): Promise<readonly DashboardCredential[]> {
  return db.any(sql.type(dashboardCredential)`
    SELECT ${columns} FROM credentials
    WHERE application_id = ${applicationId} AND mode = ${mode}
    ORDER BY created_at DESC, id`);
}

/** Revokes a credential of the application and mode; null when there is no such credential. */
export async function revokeModeCredential(
  db: CommonQueryMethods,
  applicationId: string,
  mode: Mode,
  id: string,
): Promise<DashboardCredential | null> {
  return db.maybeOne(sql.type(dashboardCredential)`
    UPDATE credentials SET revoked_at = coalesce(revoked_at, now())
    WHERE id = ${id} AND application_id = ${applicationId} AND mode = ${mode}
    RETURNING ${columns}`);
}
