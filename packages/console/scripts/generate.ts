/**
 * `pnpm --filter @plantgate/console generate`: writes page/console.js's event type list from core's
 * SECURITY_EVENT_TYPES, then src/generated/page.ts from the files in page/. The page is served
 * from a module (Workers have no file system), so the files travel as string constants; the module
 * is committed, so `pnpm install && pnpm start` needs no build step, and test/generated.test.ts
 * fails when it differs from page/, or the list from core's. Run it after editing page/ or
 * changing core's event types.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GENERATED, generatedModule, PAGE_DIR, withCoreEventTypes } from "./files.js";

const script = join(PAGE_DIR, "console.js");
const before = readFileSync(script, "utf8");
const after = withCoreEventTypes(before);
if (after !== before) {
  writeFileSync(script, after);
  console.log("wrote page/console.js's EVENT_TYPES from core's SECURITY_EVENT_TYPES");
}
writeFileSync(GENERATED, generatedModule());
console.log("wrote src/generated/page.ts from page/");
