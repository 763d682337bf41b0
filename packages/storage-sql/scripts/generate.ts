// `pnpm --filter @plantgate/storage-sql generate`: writes the D1 migration SQL (see src/d1/compile-migrations.ts).
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { d1MigrationsModule } from "../src/d1/compile-migrations.js";

const target = join(dirname(fileURLToPath(import.meta.url)), "../src/d1/generated/migrations.ts");
mkdirSync(dirname(target), { recursive: true });
writeFileSync(target, await d1MigrationsModule());
console.log(`wrote ${target}`);
