import type { RedisScriptClient } from "./scripts.js";

/** What every hot store shares: the client, the key layout and the clock. @internal */
export interface HotContext {
  client: RedisScriptClient;
  /** The prefix of every key, e.g. `plantgate:`. */
  prefix: string;
  /** Epoch ms; the same clock the core runs on (`createPlantgate({ clock })`). */
  clock: () => number;
  /** How long after its logical end a record is still kept (clock skew between instances). */
  marginMs: number;
}
