/**
 * The rule of a role, as accounts store it (checkAccountInput) and as `console.adminRole` names one.
 * Its own module so that options.ts can apply it without pulling in the admin operations.
 */
import { INVISIBLE_CLASS, isStorableText } from "../util/storable-text.js";

/** A first or last character that shows as nothing (see {@link INVISIBLE_CLASS}). */
const INVISIBLE_EDGE = new RegExp(`^[${INVISIBLE_CLASS}]|[${INVISIBLE_CLASS}]$`, "u");

/** The rule in words, for the messages that refuse a role. */
export const ROLE_RULE = "1-100 characters, without control or invisible characters (none at either end)";

/**
 * Whether `role` is one an account can be given: a string of 1-100 characters every store holds
 * unchanged, with no control or format character and nothing invisible at either end. A role is
 * compared exactly (the console's admin role): one that only looks like another ("admin" with a
 * zero-width space) or that no text column holds (U+0000, a lone surrogate) was taken before
 * 2026-11-29.
 */
export function isRole(role: unknown): role is string {
  return typeof role === "string" && role.length >= 1 && role.length <= 100 && isStorableText(role) && !INVISIBLE_EDGE.test(role) && !/[\p{Cc}\p{Cf}]/u.test(role);
}
