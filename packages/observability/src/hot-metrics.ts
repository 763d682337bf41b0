/**
 * Counters and histograms for the per-request path, served through a prom-client `Registry`.
 *
 * prom-client's own `inc(labels)` and `observe(labels, v)` sort and join the label names into a
 * hash and validate every label on each call (a labelled child does the same); a token request
 * made ten such calls, about a third of what logs, events and metrics together cost it (see the
 * README's performance section). Here the label values come as an array in the declared order,
 * the series is found through one Map per label, no key built, and an observation is two array
 * increments. The registry still formats them: `get()` returns what prom-client's own metrics
 * return, so the text exposition is the same (bucket lines `le` first, then `_sum` and `_count`).
 */
import type { Registry } from "prom-client";

export interface Series {
  labels: Record<string, string>;
  /** Per bucket (not cumulative); the last slot is above the highest bound. */
  counts: number[];
  sum: number;
  count: number;
}

/** Series by label value, one Map per label (the last level holds the series). */
type Level = Map<string, Level | Series>;

interface MetricValue {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

/** What the registry reads of a metric (prom-client's `MetricObjectWithValues`). */
interface Exposed {
  name: string;
  help: string;
  type: "counter" | "histogram";
  aggregator: "sum";
  values: MetricValue[];
}

/** Series remembered by {@link HotMetric}'s lookup. */
const MEMO = 4;

abstract class HotMetric {
  readonly aggregator = "sum" as const;
  /** Every series, in the order first observed (what the registry lists). */
  protected series: Series[] = [];
  abstract readonly type: "counter" | "histogram";

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    buckets: number,
    registers: readonly Registry[],
  ) {
    this.slots = buckets + 1;
    // As prom-client does: a metric without labels shows its one series (0) from the start.
    if (labelNames.length === 0) this.seriesOf([]);
    // prom-client's registry takes any object with these members; its types list only its own classes.
    for (const registry of registers) registry.registerMetric(this as unknown as Parameters<Registry["registerMetric"]>[0]);
  }

  private readonly slots: number;

  /** One level per label, by value: a known series is found without building a key. */
  private readonly index: Level = new Map();

  /**
   * The last MEMO series found and their label values, newest first: a run of requests to one
   * route, or a request's storage calls taking turns (clients.get, attempts.get, ...), skip the
   * Maps. Label values are compared by identity first (the same route or store name is the same
   * string every time), so a hit costs a few comparisons.
   */
  private memoValues: Array<readonly string[]> = [];
  private memoSeries: Series[] = [];

  /**
   * The series of these label values (made if new). A caller may keep it to count into with `add`
   * or `record` later without a lookup, until {@link epoch} changes (a reset drops every series).
   */
  seriesOf(values: readonly string[]): Series {
    const memoValues = this.memoValues;
    for (let m = 0; m < memoValues.length; m++) {
      const last = memoValues[m]!;
      let same = last.length === values.length;
      for (let i = 0; same && i < values.length; i++) same = last[i] === values[i];
      if (same) return this.memoSeries[m]!;
    }
    const series = this.find(values);
    if (memoValues.length === MEMO) {
      memoValues.pop();
      this.memoSeries.pop();
    }
    memoValues.unshift(values);
    this.memoSeries.unshift(series);
    return series;
  }

  protected find(values: readonly string[]): Series {
    let level: Level = this.index;
    const last = values.length - 1;
    for (let i = 0; i < last; i++) {
      const value = values[i]!;
      let next = level.get(value) as Level | undefined;
      if (next === undefined) level.set(value, (next = new Map()));
      level = next;
    }
    const leaf = last < 0 ? "" : values[last]!;
    let series = level.get(leaf) as Series | undefined;
    if (series === undefined) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, i) => (labels[name] = values[i]!));
      series = { labels, counts: new Array<number>(this.slots).fill(0), sum: 0, count: 0 };
      level.set(leaf, series);
      this.series.push(series);
    }
    return series;
  }

  /** Counts the resets: a series found before the current epoch is no longer listed. */
  get epoch(): number {
    return this.resets;
  }

  private resets = 0;

  /** Label values whose series are listed (at 0) from the start and again after every reset. */
  protected initial: ReadonlyArray<readonly string[]> = [];

  /** Drops every series (prom-client's `registry.resetMetrics()` calls it), but for the initial ones, at 0. */
  reset(): void {
    this.resets++;
    this.memoValues = [];
    this.memoSeries = [];
    this.series = [];
    this.index.clear();
    if (this.labelNames.length === 0) this.seriesOf([]);
    for (const values of this.initial) this.find(values);
  }

  protected abstract values(): MetricValue[];

  get(): Promise<Exposed> {
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.values() });
  }
}

/** A counter (name ending in `_total`); label values in the order of `labelNames`. */
export class HotCounter extends HotMetric {
  readonly type = "counter" as const;

  /**
   * `initial`: label values whose series are listed at 0 from the start and after every reset
   * (what an operator alerts on: a rate() needs a series before the first count).
   */
  constructor(config: { name: string; help: string; labelNames?: readonly string[]; initial?: ReadonlyArray<readonly string[]>; registers: readonly Registry[] }) {
    super(config.name, config.help, config.labelNames ?? [], 0, config.registers);
    this.initial = config.initial ?? [];
    for (const values of this.initial) this.find(values);
  }

  inc(values: readonly string[], by = 1): void {
    this.seriesOf(values).sum += by;
  }

  /** `inc` into a series from {@link seriesOf} (of this epoch). */
  add(series: Series, by = 1): void {
    series.sum += by;
  }

  protected values(): MetricValue[] {
    return this.series.map((s) => ({ labels: s.labels, value: s.sum }));
  }
}

/** A histogram with fixed upper bounds (seconds); label values in the order of `labelNames`. */
export class HotHistogram extends HotMetric {
  readonly type = "histogram" as const;
  private readonly bounds: readonly number[];

  constructor(config: { name: string; help: string; labelNames: readonly string[]; buckets: readonly number[]; registers: readonly Registry[] }) {
    super(config.name, config.help, config.labelNames, config.buckets.length, config.registers);
    this.bounds = config.buckets;
  }

  observe(values: readonly string[], seconds: number): void {
    if (!Number.isFinite(seconds)) return;
    this.record(this.seriesOf(values), seconds);
  }

  /** `observe` into a series from {@link seriesOf} (of this epoch). */
  record(series: Series, seconds: number): void {
    if (!Number.isFinite(seconds)) return;
    let slot = 0;
    while (slot < this.bounds.length && seconds > this.bounds[slot]!) slot++;
    series.counts[slot]!++;
    series.sum += seconds;
    series.count++;
  }

  protected values(): MetricValue[] {
    const out: MetricValue[] = [];
    for (const s of this.series) {
      let below = 0;
      this.bounds.forEach((bound, i) => {
        below += s.counts[i]!;
        out.push({ labels: { le: bound, ...s.labels }, value: below, metricName: `${this.name}_bucket` });
      });
      out.push({ labels: { le: "+Inf", ...s.labels }, value: s.count, metricName: `${this.name}_bucket` });
      out.push({ labels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      out.push({ labels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return out;
  }
}
