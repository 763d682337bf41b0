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
  // An "@" with no userinfo parsed (a password of digits first and an unescaped "/", "?" or "#"
  // reads as a port and a path, query or fragment), or one userinfoAmbiguous refuses.
  if ((url.includes("@") && u.username === "" && u.password === "") || userinfoAmbiguous(url, u)) {
    return `${u.protocol}//*** (userinfo not parsable: shown without its address)`;
  }
  if (u.password) u.password = "***";
  for (const name of new Set(u.searchParams.keys())) {
    if (SECRET_PARAM.test(name)) u.searchParams.set(name, "***");
  }
  return u.toString();
}

/** Query parameter names that may hold a secret (case-insensitive, anywhere in the name). */
const SECRET_PARAM = /pass|pwd|secret|token|key|auth|cred/i;

/**
 * Whether `url` is refused because where its userinfo ends cannot be told, so that nothing of it is
 * safe to print, nor a driver's error naming its host: an "@" left after the authority the URL parser
 * read, in the path, the fragment, or a query parameter's name. A password with an unescaped "@"
 * and then "/", "?" or "#" ends the authority at that "@" and the character after it:
 * `redis://app:hunter2@secret/word@host` parses as user `app`, password `hunter2`, host `secret` and
 * path `/word@host`, so the host a driver fails to resolve ("ENOTFOUND secret") and the path are the
 * password's rest (until 2026-12-01 both were printed). An "@" within the authority is the parser's
 * own (it takes the last one there), a percent-encoded `%40` is not an "@", and one in a query
 * parameter's value (`?application_name=ops@eu`, `?user=alice@corp`) is left alone.
 * {@link redactConnectionUrl} shows more URLs as their scheme only (any "@" without a userinfo).
 */
export function userinfoAmbiguous(url: string, parsed?: URL): boolean {
  if (!url.includes("@")) return false;
  let u = parsed;
  if (u === undefined) {
    try {
      u = new URL(url);
    } catch {
      // Not a URL at all: refused, and shown as its scheme only, as such.
      return false;
    }
  }
  if (u.pathname.includes("@") || u.hash.includes("@")) return true;
  return u.search.slice(1).split("&").some((pair) => pair.split("=", 1)[0]!.includes("@"));
}

/** What to do about a URL {@link userinfoAmbiguous} refuses. */
export const AMBIGUOUS_USERINFO = 'an "@" follows its host, so where its user name and password end cannot be told: percent-encode any @ : / ? # in the user name or password (@ as %40)';
