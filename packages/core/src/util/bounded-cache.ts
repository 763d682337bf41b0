/**
 * Stores `value` under `key`, first emptying `cache` when it already holds `limit` entries: the
 * caches of pure per-request computations (hashes, parsed addresses) whose keys may come from
 * clients, so they must not grow without bound. Starting over is cheap and cannot be exploited
 * beyond costing the recomputation.
 *
 * @example
 * const cache = new Map<string, string>();
 * remember(cache, "198.51.100.7", "198.51.100.7", 1024);
 */
export function remember<V>(cache: Map<string, V>, key: string, value: V, limit: number): void {
  if (cache.size >= limit) cache.clear();
  cache.set(key, value);
}
