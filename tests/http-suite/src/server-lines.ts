/**
 * The example servers' JSON lines (events, housekeeping), kept for a check instead of going to
 * stdout: every test that starts an example server in process hands it one of these (the lines
 * would otherwise fill the test run's output), and checks them when it stops the server.
 */

/** A signed JWT (header and payload are base64url JSON objects): an access token or an assertion. */
const JWT = /eyJ[\w-]+\.eyJ[\w-]+\./;

export interface ServerLines {
  /** For the example server's `logging` argument. */
  destination: { write(line: string): void };
  /**
   * Throws unless some line is a security event (so the lines were written here at all) and no line
   * holds one of `secrets` or a JWT (an access token or a client assertion the test sent).
   */
  check(secrets: readonly string[]): void;
}

export function serverLines(): ServerLines {
  const lines: string[] = [];
  return {
    destination: { write: (line) => void lines.push(line) },
    check(secrets) {
      const text = lines.join("");
      if (!/^\{"level":"\w+","time":"[^"]+","event":"[a-z_.]+","event_time":\d+,/m.test(text)) throw new Error(`no event among the server's ${lines.length} lines`);
      for (const secret of secrets) if (text.includes(secret)) throw new Error("a server log line holds a secret the test sent");
      const jwt = JWT.exec(text);
      if (jwt) throw new Error(`a server log line holds a JWT: ${jwt[0].slice(0, 20)}...`);
    },
  };
}
