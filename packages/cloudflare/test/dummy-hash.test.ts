/**
 * Why the dummy password hash, one promise shared by every password check of an unknown username
 * (core's options.ts), needs no bound in workerd, unlike the isolate's start, the key reload and
 * a jwks_uri fetch: workerd's Web Crypto runs PBKDF2 at once, so core's `hashPassword` settles
 * within the microtasks of the turn that began it, before any other request runs and before the
 * context that began it can be cancelled or found hung. Should that change (a hash that yields to
 * a timer or to I/O), a later request could wait on a hash whose context is gone, and this fails.
 */
import { expect, it } from "vitest";
import { startWorker } from "./support.js";

const ENTRY = `
import { hashPassword } from "@plantgate/core";
export default {
  async fetch() {
    let done = false;
    let turns = 0;
    // The Worker's cost (WORKERS_MAX_PASSWORD_HASH_ITERATIONS), as options.ts makes the dummy hash.
    const hash = hashPassword("plantgate-dummy-password", (n) => crypto.getRandomValues(new Uint8Array(n)), { iterations: 100000 }).then((phc) => {
      done = true;
      return phc;
    });
    // Microtasks only: no timer, no I/O, so the event loop does not turn.
    while (!done && turns < 100) {
      await Promise.resolve();
      turns++;
    }
    return Response.json({ settledWithinTheTurn: done, phc: (await hash).replace(/\\$[^$]+\\$[^$]+$/, "") });
  },
};
`;

it("in workerd, core's hashPassword (100 000 iterations) settles within the microtasks of the turn that began it", async () => {
  const { mf } = await startWorker(ENTRY);
  try {
    const res = await mf.dispatchFetch("http://worker.test/");
    expect(await res.json()).toEqual({ settledWithinTheTurn: true, phc: "$pbkdf2-sha256$i=100000,l=32" });
  } finally {
    await mf.dispose();
  }
}, 30_000);
