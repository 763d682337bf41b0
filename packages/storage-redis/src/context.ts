import type { ScriptRunner } from "./scripts.js";

/** What every hot store shares: the client, the key layout and the clock. @internal */
export interface HotContext {
  /** The client, each operation under one deadline. */
  client: ScriptRunner;
  /** The prefix of every key, e.g. `plantgate:`. */
  prefix: string;
  /** Epoch ms; the same clock the core runs on (`createPlantgate({ clock })`). */
  clock: () => number;
  /** How long after its logical end a record is still kept (clock skew between instances). */
  marginMs: number;
}
