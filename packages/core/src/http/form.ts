/** Thrown when a form body or a form-encoded credential is malformed. */
export class FormError extends Error {
  override readonly name: string = "FormError";
}

/** Thrown when a well-formed body exceeds a {@link FormLimits} limit; the message is safe to send. */
export class FormLimitError extends FormError {
  override readonly name = "FormLimitError";
}

/** Caps on a parsed form (the byte size of the whole body is capped before parsing). */
export interface FormLimits {
  /** Most name=value pairs, repeated ones included. */
  maxParameters: number;
  /** Most bytes (UTF-8, after decoding) of any one name or value. */
  maxFieldBytes: number;
}

const utf8 = new TextEncoder();

/** Whether the UTF-8 form of `text` is longer than `max` bytes; encodes only when length alone cannot tell (1-3 bytes per UTF-16 unit). */
function longerThan(text: string, max: number): boolean {
  if (text.length > max) return true;
  if (text.length * 3 <= max) return false;
  return utf8.encode(text).byteLength > max;
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
export function parseForm(body: string, limits?: FormLimits): { values: Map<string, string>; repeated: string[] } {
  const values = new Map<string, string>();
  const seen = new Set<string>();
  const repeated: string[] = [];
  if (body === "") return { values, repeated };
  const pairs = body.split("&").filter((p) => p !== "");
  if (limits && pairs.length > limits.maxParameters) {
    throw new FormLimitError(`The request has more than ${limits.maxParameters} parameters.`);
  }
  for (const pair of pairs) {
    const eq = pair.indexOf("=");
    const name = decodeFormComponent(eq === -1 ? pair : pair.slice(0, eq));
    const value = eq === -1 ? "" : decodeFormComponent(pair.slice(eq + 1));
    if (limits && (longerThan(name, limits.maxFieldBytes) || longerThan(value, limits.maxFieldBytes))) {
      throw new FormLimitError(`A parameter name or value is longer than ${limits.maxFieldBytes} bytes.`);
    }
    if (seen.has(name)) {
      if (!repeated.includes(name)) repeated.push(name);
      continue;
    }
    seen.add(name);
    if (value !== "") values.set(name, value);
  }
  return { values, repeated };
}
