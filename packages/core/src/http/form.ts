/** Thrown when a form body or a form-encoded credential is malformed. */
export class FormError extends Error {
  override readonly name = "FormError";
}

/** Decodes one application/x-www-form-urlencoded component strictly (bad %-escapes are errors, not passed through). */
export function decodeFormComponent(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, " "));
  } catch {
    throw new FormError("malformed percent-encoding");
  }
}

/**
 * Parses an application/x-www-form-urlencoded body into single values. Unlike URLSearchParams it
 * reports repeated names (RFC 6749 §3.2: parameters MUST NOT be included more than once) and
 * malformed escapes instead of hiding them. Empty values count as omitted (RFC 6749 §3.1).
 */
export function parseForm(body: string): { values: Map<string, string>; repeated: string[] } {
  const values = new Map<string, string>();
  const seen = new Set<string>();
  const repeated: string[] = [];
  if (body === "") return { values, repeated };
  for (const pair of body.split("&")) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    const name = decodeFormComponent(eq === -1 ? pair : pair.slice(0, eq));
    const value = eq === -1 ? "" : decodeFormComponent(pair.slice(eq + 1));
    if (seen.has(name)) {
      if (!repeated.includes(name)) repeated.push(name);
      continue;
    }
    seen.add(name);
    if (value !== "") values.set(name, value);
  }
  return { values, repeated };
}
