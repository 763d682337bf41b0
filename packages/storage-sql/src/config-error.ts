import { AMBIGUOUS_USERINFO, redactConnectionUrl as redactUrl, userinfoAmbiguous } from "@plantgate/core";

/**
 * A store that cannot be opened as configured, nothing contacted or changed: a malformed
 * environment (`openStorageFromEnv`), a URL its driver cannot parse or of no supported form
 * (`openSqlStorage` too), a database that cannot be opened; also, nothing changed, a PostgreSQL URL
 * that reaches the server through a pooler in transaction mode (`TransactionPoolingError`, a
 * subclass). It extends `Error`, not `TypeError`
 * (the refusal of an unsupported scheme, an empty URL or `sqlite:` without a path was a
 * `TypeError` until 2026-11-30). Not an outage (`StorageError`): trying again changes nothing.
 * Its message never holds a password.
 *
 * @example
 * try {
 *   await openSqlStorage(url);
 * } catch (e) {
 *   if (e instanceof StorageConfigError) console.error(`fix the store URL: ${e.message}`);
 *   throw e;
 * }
 */
export class StorageConfigError extends Error {
  override readonly name: string = "StorageConfigError";
}

/**
 * Why the driver would refuse a `postgres://` or `mysql://` URL before contacting anything, read as
 * the driver reads it, or null: `pg` (pg-connection-string) encodes spaces and malformed escapes,
 * then parses it with `URL` and decodes the user, password, host and database; `mysql2` parses it
 * with `URL` and decodes those parts with decodeURIComponent. Never quotes the URL (it may hold a
 * password).
 */
export function malformedUrl(url: string): string | null {
  // A password with an unescaped "@" and then "/", "?" or "#": the host the driver would try (and
  // name in its error) is part of the password (tried, and printed, until 2026-12-01).
  if (userinfoAmbiguous(url)) return `is not a valid URL: ${AMBIGUOUS_USERINFO}`;
  const mysql = /^(mysql|mariadb):/i.test(url);
  let text = url;
  if (!mysql && / |%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(text)) text = encodeURI(text).replace(/%25(\d\d)/g, "%$1");
  let parsed: URL;
  try {
    if (mysql) parsed = new URL(text);
    else {
      try {
        parsed = new URL(text, "postgres://base");
      } catch {
        // pg reads `user:pw@/db` (no host) with a stand-in host.
        parsed = new URL(text.replace("@/", "@___DUMMY___/"), "postgres://base");
      }
    }
  } catch {
    return "is not a valid URL: check the host and the port (a number up to 65535), and percent-encode any @ : / ? # in the user name or password";
  }
  // mysql2 keeps the URL's own user name and password, empty ones too, over `?user=` and
  // `?password=` (dropped quietly until 2026-12-03: the connection went without them).
  const ignored = mysql ? ["user", "password"].filter((name) => parsed.searchParams.has(name)) : [];
  if (ignored.length > 0) {
    const what = ignored.length === 2 ? "user name and password as query parameters" : `${ignored[0] === "user" ? "user name" : "password"} as a query parameter`;
    return `(${redactUrl(url)}) gives the ${what}, which the MySQL driver ignores: write mysql://user:password@host:port/database (percent-encode any reserved character in them)`;
  }
  // pg takes `?user=`, `?password=` and `?host=` (when not empty) in place of those parts and then
  // never decodes the part; with `?host=`, a URL-encoded socket path as the host goes in front of
  // the database name, which it decodes. mysql2 decodes the four parts whatever the query says.
  const given = (name: string) => !mysql && Boolean(parsed.searchParams.get(name));
  const database = given("host") && /^%2f/i.test(parsed.hostname) ? `/${parsed.hostname}${parsed.pathname}` : parsed.pathname;
  const parts: [string, string, (s: string) => string][] = [
    ...(given("user") ? [] : [["user name", parsed.username, decodeURIComponent] as [string, string, (s: string) => string]]),
    ...(given("password") ? [] : [["password", parsed.password, decodeURIComponent] as [string, string, (s: string) => string]]),
    ...(given("host") ? [] : [["host", parsed.hostname, decodeURIComponent] as [string, string, (s: string) => string]]),
    ["database name", database.slice(1), mysql ? decodeURIComponent : decodeURI],
  ];
  for (const [part, value, decode] of parts) {
    try {
      decode(value);
    } catch {
      return `(${redactUrl(url)}) has a malformed percent-escape in its ${part}: % must be followed by two hexadecimal digits, and the escapes must spell UTF-8 (write a literal % as %25)`;
    }
  }
  return null;
}
