import { randomToken, type RandomBytes } from "../crypto/index.js";

// A refresh token is its issue time (epoch ms, 11 lowercase hex digits) followed by 256 random bits
// (43 base64url characters), and it is stored under that time followed by the token's SHA-256.
// The time is not a secret (the record's `createdAt` holds it too) and adds nothing to guess: the
// random part is what makes the token. It is there for ordered storage: a key that starts with the
// time puts each new token at the end of the key index (a B-tree in SQLite, PostgreSQL and MySQL),
// where the tokens stored just before it are, instead of at a random leaf. On SQLite every rotation
// wrote one 4 KiB page fewer to the WAL (and the checkpoint one fewer back): measured in the README's
// performance section. Tokens issued before this format (43 characters, no time) keep their plain
// SHA-256 key, so they stay valid across the upgrade.

const TIME_DIGITS = 11;
/** The largest time 11 hex digits hold (year 2527). */
const MAX_TIME = 16 ** TIME_DIGITS - 1;
const TIMED = /^[0-9a-f]{11}[A-Za-z0-9_-]{43}$/;

/** A new refresh token issued at `now` (epoch ms). */
export function newRefreshToken(random: RandomBytes, now: number): string {
  const time = Math.min(Math.max(0, Math.trunc(now)), MAX_TIME);
  return time.toString(16).padStart(TIME_DIGITS, "0") + randomToken(random, 32);
}

/**
 * The storage key of a refresh token as presented: its time prefix and SHA-256 when it has the
 * current form, else the SHA-256 alone (tokens from before the time prefix). Any text maps to one
 * key; text that is not a token we issued maps to a key no token has.
 */
export async function refreshTokenKey(sha256: (text: string) => Promise<string>, token: string): Promise<string> {
  const hash = await sha256(token);
  return TIMED.test(token) ? token.slice(0, TIME_DIGITS) + hash : hash;
}
