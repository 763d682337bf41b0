/**
 * Records written straight into the CLI tests' SQLite store (`plantgate.db` in the test's
 * directory), as an operator's SQL or an older version would have written them: past the admin
 * API's checks. Not a test file itself (vitest only picks up `*.test.ts`).
 */
import { join } from "node:path";
import type { AccountRecord, ClientRecord } from "@plantgate/core";
import { openStorageFromEnv } from "@plantgate/storage-sql/env";
import { expect } from "vitest";

/**
 * Writes `accounts`, then `clients`, into the store at `dir`, each create checked. A client is a
 * `client_secret` client with no secrets, for `client_credentials`, with no scopes and no TTLs of
 * its own, created at 1_700_000_000_000, unless its fields say otherwise.
 */
export async function writeByHand(dir: string, records: { accounts?: AccountRecord[]; clients?: (Partial<ClientRecord> & { clientId: string; name: string })[] }): Promise<void> {
  const storage = await openStorageFromEnv({ PLANTGATE_DB: join(dir, "plantgate.db") }, { cwd: dir, clientCache: false });
  try {
    for (const account of records.accounts ?? []) expect(await storage.accounts.create(account)).toBe(true);
    for (const client of records.clients ?? []) {
      const created = await storage.clients.create({
        authMethod: "client_secret",
        secrets: [],
        jwks: null,
        jwksUri: null,
        grantTypes: ["client_credentials"],
        scopes: [],
        accessTokenTtl: null,
        refreshTokenTtl: null,
        refreshTokenAbsoluteTtl: null,
        createdAt: 1_700_000_000_000,
        secretUpdatedAt: 1_700_000_000_000,
        ...client,
      });
      expect(created).toBe(true);
    }
  } finally {
    await storage.close();
  }
}
