/**
 * The generated module must be the installed swagger-ui-dist, byte for byte: it is generated and
 * committed (the core cannot read files), so this test is what keeps it from drifting.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SWAGGER_UI_ASSETS, SWAGGER_UI_VERSION } from "../src/index.js";
import * as generated from "../src/generated/swagger-ui.js";
import { ASSET_FILES, swaggerUiDistDir } from "../scripts/dist.js";

const dist = swaggerUiDistDir();

describe("@plantgate/docs: the generated Swagger UI module", () => {
  it("is generated from the installed swagger-ui-dist version", () => {
    const pkg = JSON.parse(readFileSync(join(dist, "package.json"), "utf8")) as { version: string };
    expect(SWAGGER_UI_VERSION).toBe(pkg.version);
  });

  for (const [name, file] of Object.entries(ASSET_FILES)) {
    it(`${name} is swagger-ui-dist/${file} byte for byte (else run \`pnpm --filter @plantgate/docs generate\`)`, () => {
      const onDisk = readFileSync(join(dist, file));
      const text = (generated as Record<string, string>)[name]!;
      expect(onDisk.length).toBeGreaterThan(1000);
      // Buffer.equals, not toEqual: a 1.7 MB diff would drown the report.
      expect(Buffer.from(text, "utf8").equals(onDisk)).toBe(true);
      expect(SWAGGER_UI_ASSETS[file]!.text).toBe(text);
    });
  }

  it("carries swagger-ui's Apache-2.0 NOTICE in a legal comment (/*! */), which bundlers keep (an ordinary // comment was dropped from the built package)", () => {
    const notice = readFileSync(join(dist, "NOTICE"), "utf8").trim().replace(/\n/g, " / ");
    const source = readFileSync(new URL("../src/generated/swagger-ui.ts", import.meta.url), "utf8");
    expect(source.split("\n")[1]).toBe(`/*! swagger-ui is Apache-2.0 (NOTICE: ${notice}). Bundled third-party licenses: the "${ASSET_FILES.SWAGGER_UI_BUNDLE_LICENSES}" asset. */`);
  });

  it("serves each file with its media type", () => {
    expect(Object.fromEntries(Object.entries(SWAGGER_UI_ASSETS).map(([f, a]) => [f, a.contentType]))).toEqual({
      "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
      "swagger-ui.css": "text/css; charset=utf-8",
      "swagger-ui-bundle.js.LICENSE.txt": "text/plain; charset=utf-8",
    });
  });
});
