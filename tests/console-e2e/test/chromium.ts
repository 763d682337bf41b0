/**
 * Debian's Chromium as every console browser test launches it, and how a suite is named and run
 * when it is missing: skipped locally (the name says why), a failure under `CI=true`.
 */
import { existsSync } from "node:fs";
import { describe } from "vitest";

export const CHROMIUM = process.env.PLANTGATE_CHROMIUM ?? "/usr/bin/chromium";
export const present = existsSync(CHROMIUM);
export const CI = process.env.CI === "true";
/**
 * As the machine's probe starts it as root. The machine has no network: without the
 * background-networking flags Chromium's own fetches fail noisily and its connections are refused
 * many at a time.
 */
export const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

/** The suite's name, saying when Chromium is missing whether that skips it or must fail it. */
export const suiteName = (title: string): string =>
  present ? title : CI ? `${title} (chromium missing under CI=true: must fail)` : `${title} (SKIPPED: ${CHROMIUM} not found; apt-get install chromium)`;

/** `describe`, or `describe.skip` when Chromium is missing outside CI. */
export const suite = present || CI ? describe : describe.skip;

/** Fails the suite's start when Chromium is missing (a suite runs then only under `CI=true`), saying how to install it. */
export function requireChromium(): void {
  if (!present) throw new Error(`${CHROMIUM} is missing; .ci/run installs Debian's chromium (apt-get install chromium)`);
}

/**
 * An init script (`context.addInitScript`) run before the page's own script: records in
 * `window.pageProblems` what a missing catch (an unhandled rejection) or a CSP violation leaves
 * behind, for the test to read after each case.
 */
export const PAGE_PROBES = (): void => {
  const w = window as unknown as { pageProblems: string[] };
  w.pageProblems = [];
  window.addEventListener("unhandledrejection", (e) => w.pageProblems.push(`unhandled rejection: ${String(e.reason)}`));
  document.addEventListener("securitypolicyviolation", (e) => w.pageProblems.push(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
};
