/**
 * A connection URL (database, Redis) as it may be printed: the userinfo's password replaced by
 * `***`, and the value of every query parameter that may hold a secret (`password`, `sslpassword`,
 * `sslkey`, `token`, `secret`, …; drivers accept `?password=`) replaced too. A URL that does not
 * parse (a password with an unescaped `/`, say), or one whose `@` did not end up in a userinfo (a
 * password of digits first and an unescaped `/`, `?` or `#` parses as a port and a path), is shown
 * as its scheme only: where its userinfo ends cannot be told, so nothing after it is safe to print.
 *
 * @example
 * redactConnectionUrl("postgres://app:hunter2@db:5432/plantgate?sslpassword=x")
 * // "postgres://app:***@db:5432/plantgate?sslpassword=***"
 */
export function redactConnectionUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.exec(url)?.[0];
    return scheme ? `${scheme}//*** (not a valid URL: shown without its address)` : "*** (not a valid URL)";
  }
  // An "@" with no userinfo parsed: a password with an unescaped "/", "?" or "#" (and digits
  // first, read as a port) ended the authority early and sits in the path, query or fragment.
  if (u.username === "" && u.password === "" && url.includes("@")) return `${u.protocol}//*** (userinfo not parsable: shown without its address)`;
  if (u.password) u.password = "***";
  for (const name of new Set(u.searchParams.keys())) {
    if (SECRET_PARAM.test(name)) u.searchParams.set(name, "***");
  }
  return u.toString();
}

/** Query parameter names that may hold a secret (case-insensitive, anywhere in the name). */
const SECRET_PARAM = /pass|pwd|secret|token|key|auth|cred/i;
