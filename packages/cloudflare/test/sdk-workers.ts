/**
 * What the workerd tests of the client SDK (client-sdk-*.test.ts) share: the bootstrap identities,
 * plantgate's own Worker (`createWorker()` on D1) as a Miniflare worker named "plantgate", and the
 * small helpers their app Workers and test bodies use.
 */
import { Miniflare, type WorkerOptions } from "miniflare";
import { afterEach } from "vitest";
import { bundle, COMPATIBILITY_DATE } from "./support.js";

/** The bootstrap client and account of plantgate's Worker, also the app Worker's bindings. */
export const IDS = {
  PLANTGATE_BOOTSTRAP_CLIENT_ID: "sdk-client",
  PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "sdk-client-secret-0123456789abcdef",
  PLANTGATE_BOOTSTRAP_USERNAME: "sdk-user",
  PLANTGATE_BOOTSTRAP_PASSWORD: "sdk-user-password-0123",
};

/** plantgate's Worker, named "plantgate" (the app reaches it through a service binding), with these extra bindings. */
export async function plantgateWorker(bindings: Record<string, string> = {}): Promise<WorkerOptions & { name: string }> {
  return {
    name: "plantgate",
    modules: true,
    script: await bundle(`import { createWorker } from "../src/index.ts";\nexport default createWorker();\n`),
    compatibilityDate: COMPATIBILITY_DATE,
    d1Databases: ["DB"],
    bindings: { ...IDS, PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", ...bindings },
  };
}

/** App Worker source: a call's outcome as JSON, its value or its error's "name: message". */
export const OUTCOME = `const outcome = (promise) => promise.then((v) => v, (e) => e.name + ": " + e.message);`;

/** GETs `base + path` and parses its JSON. */
export const get = async (base: string, path: string): Promise<unknown> => (await fetch(base + path)).json();
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Called at a test file's top level: a function that starts these workers in one Miniflare, disposed
 * after each test, and resolves to the first worker's origin.
 */
export function workersPerTest(): (workers: WorkerOptions[]) => Promise<string> {
  let mf: Miniflare | undefined;
  afterEach(async () => {
    await mf?.dispose();
    mf = undefined;
  });
  return async (workers) => {
    mf = new Miniflare({ workers });
    return (await mf.ready).origin;
  };
}
