/**
 * PLANTGATE_SIGNING_KEY_MAX_AGE beside an activation delay the code gives (`startServer(env,
 * { signingKeyActivationDelaySeconds })`, as a host embedding the example does): optionsFromEnv
 * holds the variable to the delay + 60 rule, so a bad value is refused before the store is made,
 * naming the variable, against the code's delay when the environment sets none. Until 2026-12-01 it
 * checked against the default delay only, so a max age the overrides' delay cannot keep passed it,
 * the SQLite file was made and migrated, and createPlantgate refused it afterwards, naming the options.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "@plantgate/core";
import { startServer } from "@plantgate/example-node-server";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const quiet = { destination: { write() {} } };

describe("PLANTGATE_SIGNING_KEY_MAX_AGE beside the overrides' signingKeyActivationDelaySeconds", () => {
  it("is refused naming the variable, before the store is made", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plantgate-max-age-delay-"));
    dirs.push(dir);
    const db = join(dir, "plantgate.db");
    const env = { HOST: "127.0.0.1", PORT: "0", PLANTGATE_DB: db, PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", PLANTGATE_SIGNING_KEY_MAX_AGE: "600" };
    const outcome = await startServer(env, { signingKeyActivationDelaySeconds: 3600 }, quiet).then(
      async (server) => {
        await server.close();
        return { started: true as const };
      },
      (error: unknown) => ({ error: error instanceof Error ? `${error.constructor.name}: ${error.message}` : String(error) }),
    );
    expect({ outcome, storeMade: existsSync(db) }).toEqual({
      outcome: {
        error: `${ConfigError.name}: PLANTGATE_SIGNING_KEY_MAX_AGE must be at least signingKeyActivationDelaySeconds + 60 (3660): a new key is published that long before it signs, so a key cannot be replaced any younger; got 600`,
      },
      storeMade: false,
    });
  });
});
