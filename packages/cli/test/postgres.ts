/** The PostgreSQL the CLI tests use (`PLANTGATE_TEST_POSTGRES_URL`), and whether it answers. */
import { sql } from "kysely";
import { openStorageFromEnv } from "@plantgate/storage-sql/env";

export const POSTGRES_URL = process.env.PLANTGATE_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** Null when {@link POSTGRES_URL} answers a query; else why not (a suite's skip reason). */
export function postgresProblem(): Promise<string | null> {
  return storeProblem(POSTGRES_URL);
}

/** Null when the SQL store at `url` (PostgreSQL, MySQL/MariaDB) answers a query; else why not. */
export async function storeProblem(url: string): Promise<string | null> {
  try {
    const storage = await openStorageFromEnv({ PLANTGATE_DATABASE_URL: url }, { cwd: "/", migrate: false, clientCache: false });
    try {
      await sql`select 1`.execute(storage.db);
    } finally {
      await storage.close();
    }
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}
