/**
 * `pnpm --filter @plantgate/console generate`: writes src/generated/page.ts from the files in
 * page/. The page is served from a module (Workers have no file system), so the files travel as
 * string constants; the module is committed, so `pnpm install && pnpm start` needs no build step,
 * and test/generated.test.ts fails when it differs from page/. Run it after editing page/.
 */
import { writeFileSync } from "node:fs";
import { GENERATED, generatedModule } from "./files.js";

writeFileSync(GENERATED, generatedModule());
console.log("wrote src/generated/page.ts from page/");
