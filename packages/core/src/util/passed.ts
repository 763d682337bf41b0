/**
 * Whether `interval` ms have passed since `since` on the wall clock reading `now`, or the clock
 * stepped back behind `since` (an NTP correction, a restored VM, an operator's `date`): the
 * interval is then taken as over, never waited out for the length of the step. Used where an
 * interval is timed on the injected clock, which tests move (the keyring's reloads, a `jwks_uri`
 * set's age, a prune run's hold of the event loop).
 */
export function passed(now: number, since: number, interval: number): boolean {
  return now - since >= interval || now < since;
}
