import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * What a user gets from npm: every workspace package is built and packed as `pnpm publish` would,
 * the tarballs are installed with npm into a project outside the workspace, a server is started
 * from them, and a consumer file is type-checked under `strict` with `NodeNext` resolution.
 */
const run = promisify(execFile);
const root = resolve(import.meta.dirname, "../../..");
const rootPackage = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as { devDependencies: Record<string, string> };

interface PackageJson {
  name: string;
  private?: boolean;
  license?: string;
  exports?: unknown;
  publishConfig?: { exports?: Record<string, { types?: string; import?: string }> };
  bin?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

let work = "";
let tarballs: { dir: string; pkg: PackageJson; file: string }[] = [];
let server: ChildProcess | undefined;

async function sh(cmd: string, args: string[], cwd: string): Promise<string> {
  const { stdout } = await run(cmd, args, { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, npm_config_update_notifier: "false" } });
  return stdout;
}

async function publishablePackages(): Promise<{ dir: string; pkg: PackageJson }[]> {
  const out: { dir: string; pkg: PackageJson }[] = [];
  for (const name of (await readdir(join(root, "packages"))).sort()) {
    const dir = join(root, "packages", name);
    let pkg: PackageJson;
    try {
      pkg = JSON.parse(await readFile(join(dir, "package.json"), "utf8")) as PackageJson;
    } catch {
      continue;
    }
    if (!pkg.private) out.push({ dir, pkg });
  }
  return out;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "plantgate-publish-"));
  const packs = join(work, "packs");
  await sh("pnpm", ["-r", "--filter", "./packages/*", "build"], root);
  // All packed at once, each into a folder of its own (the one file there is its tarball): one
  // pnpm start after the other cost a second or more each on a loaded 2-core machine.
  tarballs = await Promise.all(
    (await publishablePackages()).map(async ({ dir, pkg }) => {
      const destination = join(packs, basename(dir));
      await sh("pnpm", ["pack", "--pack-destination", destination], dir);
      const files = await readdir(destination).catch(() => [] as string[]);
      if (files.length !== 1) throw new Error(`pnpm pack wrote ${files.length} files for ${pkg.name}: ${files.join(", ")}`);
      return { dir, pkg, file: join(destination, files[0]!) };
    }),
  );
  const app = join(work, "app");
  await sh("mkdir", ["-p", app], work);
  await writeFile(join(app, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  // Peers are named explicitly (express for the middleware); --legacy-peer-deps keeps npm from
  // pulling optional peers such as vitest or the SQL drivers.
  const express = tarballs.find((t) => t.pkg.name === "@plantgate/express")?.pkg.peerDependencies?.express;
  // A TypeScript user of the middleware installs Express's types too, as with any Express app.
  const expressTypes = (JSON.parse(await readFile(join(root, "packages/express/package.json"), "utf8")) as { devDependencies: Record<string, string> })
    .devDependencies["@types/express"];
  await sh(
    "npm",
    [
      "install",
      "--no-audit",
      "--no-fund",
      "--legacy-peer-deps",
      ...tarballs.map((t) => t.file),
      ...(express ? [`express@${express}`, `@types/express@${expressTypes}`] : []),
      `typescript@${rootPackage.devDependencies.typescript}`,
      `@types/node@${rootPackage.devDependencies["@types/node"]}`,
    ],
    app,
  );
});

afterAll(async () => {
  server?.kill("SIGKILL");
  if (work) await rm(work, { recursive: true, force: true });
});

async function tarList(file: string): Promise<string[]> {
  return (await sh("tar", ["tzf", file], work)).split("\n").filter(Boolean);
}

async function tarFile(file: string, path: string): Promise<string> {
  return sh("tar", ["xzf", file, "-O", path], work);
}

describe("published packages", () => {
  it("every package tarball carries the MIT LICENSE, a README and a package.json without workspace: ranges", async () => {
    const license = await readFile(join(root, "LICENSE"), "utf8");
    expect(license).toMatch(/^MIT License/);
    expect(tarballs.length).toBeGreaterThanOrEqual(8);
    for (const { pkg, file } of tarballs) {
      const files = await tarList(file);
      expect(files, pkg.name).toContain("package/LICENSE");
      expect(files, pkg.name).toContain("package/README.md");
      expect(await tarFile(file, "package/LICENSE"), pkg.name).toBe(license);
      const packed = await tarFile(file, "package/package.json");
      expect(packed, pkg.name).not.toContain("workspace:");
      const manifest = JSON.parse(packed) as PackageJson;
      expect(manifest.license, pkg.name).toBe("MIT");
      // The published entry points are the built files, and each one is in the tarball.
      const exports = manifest.exports as Record<string, { types?: string; import?: string }>;
      expect(typeof exports, pkg.name).toBe("object");
      for (const [entry, target] of Object.entries(exports)) {
        for (const path of [target.types, target.import]) {
          expect(path, `${pkg.name} ${entry}`).toMatch(/^\.\/dist\//);
          expect(files, `${pkg.name} ${entry}`).toContain(`package/${path!.slice(2)}`);
        }
      }
      for (const bin of Object.values(manifest.bin ?? {})) expect(files, pkg.name).toContain(`package/${bin.replace(/^\.\//, "")}`);
    }
  });

  it("a server started from the installed tarballs issues a token that verifies against its JWKS", async () => {
    const app = join(work, "app");
    await writeFile(
      join(app, "server.mjs"),
      `import { createPlantgate, createMemoryStorage } from "@plantgate/core";
import { serve, nodeCrypto } from "@plantgate/node";
const app = createPlantgate({ storage: createMemoryStorage(), issuer: "http://127.0.0.1", crypto: nodeCrypto() });
const { clientSecret } = await app.admin.createClient({ clientId: "packed" });
const running = await serve(app, { port: 0 });
console.log(JSON.stringify({ url: running.url, clientSecret }));
`,
    );
    server = spawn(process.execPath, ["server.mjs"], { cwd: app, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    server.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    const first = await new Promise<string>((resolveLine, reject) => {
      let out = "";
      server!.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        const nl = out.indexOf("\n");
        if (nl >= 0) resolveLine(out.slice(0, nl));
      });
      server!.once("exit", (code) => reject(new Error(`server exited ${code}: ${stderr}`)));
    });
    const { url, clientSecret } = JSON.parse(first) as { url: string; clientSecret: string };
    const res = await fetch(`${url}/UserService/connect/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`packed:${clientSecret}`)}` },
      body: "grant_type=client_credentials",
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const body = (await res.json()) as { access_token: string; token_type: string; expires_in: number };
    expect(body.token_type).toBe("Bearer");
    expect(body.expires_in).toBe(7200);
    // Verified with the jose that npm installed for @plantgate/core, against the served JWKS.
    const jose = (await import(join(app, "node_modules/jose/dist/webapi/index.js"))) as typeof import("jose");
    const { payload, protectedHeader } = await jose.jwtVerify(body.access_token, jose.createRemoteJWKSet(new URL(`${url}/.well-known/jwks.json`)), {
      issuer: "http://127.0.0.1",
    });
    expect(protectedHeader.typ).toBe("at+jwt");
    expect(payload.client_id).toBe("packed");
  });

  /** The Node packages' imports and uses, shared by both consumers below. */
  const NODE_CONSUMER = `import { createPlantgate, createMemoryStorage, type Plantgate, type Storage, type CryptoProvider } from "@plantgate/core";
import { serve, nodeCrypto, type ServeResult } from "@plantgate/node";
import { plantgate } from "@plantgate/express";
import { createSqlStorage, openSqlStorage } from "@plantgate/storage-sql";
import { createClient } from "@plantgate/client";
import { runCli } from "@plantgate/cli";
import express from "express";

const storage: Storage = createMemoryStorage();
const crypto: CryptoProvider = nodeCrypto();
const app: Plantgate = createPlantgate({ storage, issuer: "https://auth.example.com", crypto });
const running: Promise<ServeResult> = serve(app, { port: 0 });
const web = express();
web.use(plantgate(app));
const open: typeof openSqlStorage = openSqlStorage;
const create: typeof createSqlStorage = createSqlStorage;
const client = createClient({ baseUrl: "https://auth.example.com", clientId: "id", clientSecret: "secret" });
const cli: (argv: string[], io: Parameters<typeof runCli>[1]) => Promise<number> = runCli;
export { running, open, create, client, cli };
`;

  /** tsc's output for `source` under strict NodeNext with node's types and `lib` ("" when it type-checks). */
  async function typecheck(name: string, lib: string[], source: string): Promise<string> {
    const app = join(work, "app");
    await writeFile(
      join(app, `tsconfig.${name}.json`),
      JSON.stringify({
        compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, types: ["node"], lib },
        files: [`${name}.ts`],
      }),
    );
    await writeFile(join(app, `${name}.ts`), source);
    const tsc = join(app, "node_modules/typescript/bin/tsc");
    return run(process.execPath, [tsc, "-p", `tsconfig.${name}.json`], { cwd: app }).then(
      () => "",
      (e: { stdout?: string }) => e.stdout ?? String(e),
    );
  }

  it("a consumer file type-checks against the installed packages under strict with NodeNext resolution", async () => {
    const worker = `import { createWorker } from "@plantgate/cloudflare";\nexport const worker = createWorker();\n`;
    expect(await typecheck("consumer", ["ES2022", "DOM"], NODE_CONSUMER + worker)).toBe("");
  });

  it("the Node packages' declarations type-check in a Node-only project (no DOM lib): CryptoKey and JWK types that Node declares", async () => {
    // Until 2026-12-01 core's CryptoProvider and SigningKeySigner, node's NodeCryptoProvider and the
    // client's PrivateKeyInput named the DOM's CryptoKey and JsonWebKey, which @types/node does not declare.
    expect(await typecheck("consumer-node", ["ES2022"], NODE_CONSUMER)).toBe("");
  });
});
