/**
 * Reading callgrind's output for `count-http.ts`: the instructions each function spent itself
 * (not in what it called), the functions put in groups (JIT-compiled JavaScript, V8's builtins,
 * the optimizing compiler, the garbage collector, ...), and the JIT code's addresses named by the
 * JavaScript function they belong to, from the map `node --perf-basic-prof` writes.
 */

/**
 * Instructions by function, the function's own only, from a callgrind file written with
 * `--compress-strings=no` (names in full on every `fn=` line; a compressed file names a function
 * once and refers to it by number after that, across the dumps of one run).
 *
 * In the body of a function's block a cost line is `<position> <instructions>`; the cost line that
 * follows a `calls=` line is the inclusive cost of that call, which belongs to the callee, so it is
 * left out here.
 */
export function selfCosts(text: string): Map<string, number> {
  const costs = new Map<string, number>();
  let fn: string | null = null;
  let afterCalls = false;
  for (const line of text.split("\n")) {
    if (line.startsWith("fn=")) {
      fn = line.slice(3).replace(/^\(\d+\) /, "");
      afterCalls = false;
    } else if (line.startsWith("calls=")) {
      afterCalls = true;
    } else if (/^[0-9+\-*]/.test(line)) {
      if (afterCalls) {
        afterCalls = false;
        continue;
      }
      const cost = Number(line.split(" ")[1]);
      if (fn !== null && Number.isFinite(cost)) costs.set(fn, (costs.get(fn) ?? 0) + cost);
    }
  }
  return costs;
}

/** The group a function of node's process belongs to. */
export function groupOf(fn: string): string {
  if (/^0x[0-9a-f]+$/.test(fn)) return "JIT code";
  if (/compiler::|maglev|turboshaft/i.test(fn)) return "optimizing compiler";
  if (/Scaveng|MarkCompact|Heap::|heap::|Sweeper|Marking|Evacuat|MemoryAllocator|GCTracer|MinorM|PagedSpace|NewSpace|SemiSpace|MemoryChunk|RememberedSet|SlotSet/.test(fn)) return "garbage collector";
  if (fn.startsWith("Builtins_")) return "V8 builtins";
  if (/ecp_|sha256|sha512|^BN_|OPENSSL|EVP_|CRYPTO|ossl|^bn_|ECDSA|^EC_/.test(fn)) return "OpenSSL";
  if (/^_int_|malloc|^free$|memcpy|memmove|memset|strlen|syscall|epoll|clock_gettime/.test(fn)) return "libc";
  if (/llhttp/.test(fn)) return "llhttp";
  if (/node::|^uv_|^uv__/.test(fn)) return "node and libuv";
  return "other V8 and C++";
}

/** One entry of a `/tmp/perf-<pid>.map`: JIT code from `start`, `size` bytes long, and its name. */
export interface MapEntry {
  start: number;
  size: number;
  name: string;
}

/** The entries of a perf map (`<hex start> <hex size> <name>` a line), sorted by start. */
export function parsePerfMap(text: string): MapEntry[] {
  const entries: MapEntry[] = [];
  for (const line of text.split("\n")) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (m) entries.push({ start: parseInt(m[1]!, 16), size: parseInt(m[2]!, 16), name: m[3]! });
  }
  return entries.sort((a, b) => a.start - b.start);
}

/**
 * The JavaScript function whose JIT code holds `address` (callgrind names code it has no symbol
 * for by the address where it entered it), without V8's tier marks and the bundle's path;
 * `(unmapped)` when no entry holds it.
 */
export function nameAt(map: readonly MapEntry[], address: number): string {
  let lo = 0;
  let hi = map.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (map[mid]!.start <= address) lo = mid + 1;
    else hi = mid - 1;
  }
  const entry = map[hi];
  if (entry === undefined || address >= entry.start + entry.size) return "(unmapped)";
  return entry.name.replace(/^(JS|LazyCompile|Function):\s*[*~^+]?/, "").replace(/file:\/\/\S*\/\.build\//, "");
}

/** `selfCosts` in groups, and the JIT code's costs by JavaScript function. */
export function summarize(costs: Map<string, number>, map: readonly MapEntry[]): { groups: Map<string, number>; js: Map<string, number>; total: number } {
  const groups = new Map<string, number>();
  const js = new Map<string, number>();
  let total = 0;
  for (const [fn, cost] of costs) {
    total += cost;
    const group = groupOf(fn);
    groups.set(group, (groups.get(group) ?? 0) + cost);
    if (group === "JIT code") {
      const name = nameAt(map, parseInt(fn, 16));
      js.set(name, (js.get(name) ?? 0) + cost);
    }
  }
  return { groups, js, total };
}
