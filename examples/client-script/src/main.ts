/**
 * A third-party system calling plantgate with @plantgate/client: it obtains a token, creates a
 * plant with a random int64 id, lists every account page by page, refreshes its token, and prints
 * what it did. Run it against `pnpm start` with the credentials that prints:
 *
 *   PLANTGATE_CLIENT_ID=demo-client PLANTGATE_CLIENT_SECRET=... \
 *   PLANTGATE_USERNAME=demo PLANTGATE_PASSWORD=... pnpm --filter @plantgate/example-client-script start
 *
 * Without PLANTGATE_USERNAME/PASSWORD it uses the client credentials grant (no refresh token, so
 * "refresh" runs that grant again).
 */
import { ApiError, createClient, NetworkError, OAuthError } from "@plantgate/client";

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} is required (see the start-up output of \`pnpm start\`)`);
    process.exit(2);
  }
  return value;
}

/** A random signed 64-bit id: uniformly any int64, often beyond 2^53 where JS numbers lose digits. */
function randomInt64(): bigint {
  return crypto.getRandomValues(new BigInt64Array(1))[0]!;
}

/** Enough of a token to recognize it in logs, never the whole thing. */
const short = (token: string) => `${token.slice(0, 12)}...`;

async function main(): Promise<void> {
  const baseUrl = process.env.PLANTGATE_URL || "http://127.0.0.1:3000";
  const prefix = process.env.PLANTGATE_SCOPE_PREFIX || "Platform";
  const username = process.env.PLANTGATE_USERNAME;
  const password = process.env.PLANTGATE_PASSWORD;
  if (Boolean(username) !== Boolean(password)) {
    console.error("PLANTGATE_USERNAME and PLANTGATE_PASSWORD must be set together");
    process.exit(2);
  }
  const credentials = username && password ? { username, password } : undefined;
  const scope = process.env.PLANTGATE_SCOPE || (credentials ? `${prefix}_UserAPIs offline_access` : `${prefix}_UserAPIs`);

  const client = createClient({
    baseUrl,
    clientId: required("PLANTGATE_CLIENT_ID"),
    clientSecret: required("PLANTGATE_CLIENT_SECRET"),
    auth: "basic",
    scope,
    ...(credentials ? { credentials } : {}),
  });
  console.log(`plantgate at ${baseUrl} as ${credentials ? `user ${credentials.username}` : "the client itself"}`);

  const token = await client.getToken();
  console.log(
    `token: ${short(token.accessToken)} via ${token.grantType}, scope "${token.scope}", ` +
      `expires ${new Date(token.expiresAt).toISOString()}, refresh token: ${token.hasRefreshToken ? "yes" : "no"}`,
  );

  const id = randomInt64();
  const plant = await client.createPlant({ id, name: "Monstera deliciosa", tag: "indoor" });
  console.log(`created plant: id=${plant.id} name="${plant.name}" tag=${plant.tag ?? "(none)"}`);
  if (plant.id !== id) throw new Error(`the id came back as ${plant.id}, not ${id}`);
  console.log(`plant id round-trip exact: ${plant.id === id}`);

  let count = 0;
  for await (const account of client.accounts({ pageSize: 20 })) {
    count++;
    console.log(`account: ${account.username} (${account.id})${account.enabled ? "" : " disabled"}`);
  }
  console.log(`accounts: ${count}`);

  const refreshed = await client.refresh();
  console.log(`refreshed: ${short(refreshed.accessToken)} via ${refreshed.grantType}, new token: ${refreshed.accessToken !== token.accessToken}`);
  // The refreshed token works: one more call with it.
  const page = await client.listAccounts({ page: 1, pageSize: 1 });
  console.log(`after refresh: listing works, total ${page.total}`);
  console.log("done");
}

main().catch((error: unknown) => {
  if (error instanceof OAuthError) console.error(`token endpoint refused (HTTP ${error.status}): ${error.message}`); // message: escaped, bounded
  else if (error instanceof ApiError) console.error(`API error (HTTP ${error.status}): ${error.error} ${error.message}`);
  else if (error instanceof NetworkError) console.error(`cannot reach plantgate (${error.reason}): ${error.message}`);
  else console.error(error);
  process.exit(1);
});
