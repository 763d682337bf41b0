/**
 * Review (obs): the `plantgate.sign` span's `plantgate.signing_alg` names the algorithm the token
 * was signed with (README "Tracing"), not the `signingAlg` option, which only picks the algorithm
 * of generated keys.
 */
import { generateKeyPairSync, sign as nodeSign } from "node:crypto";
import { context } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { decodeProtectedHeader } from "jose";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, type SigningKeySigner } from "../src/index.js";
import { basic, harness, tokenRequest } from "./helpers.js";

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();
beforeAll(() => void context.setGlobalContextManager(contextManager.enable()));
afterAll(() => context.disable());

async function signAlgOf(h: Awaited<ReturnType<typeof harness>>) {
  exporter.reset();
  const res = await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) });
  expect(res.status).toBe(200);
  const token = ((await res.json()) as { access_token: string }).access_token;
  const sign = exporter.getFinishedSpans().filter((s) => s.name === "plantgate.sign");
  return { header: decodeProtectedHeader(token).alg, span: sign.map((s) => s.attributes["plantgate.signing_alg"]) };
}

it("a configured RS256 signingKey (PLANTGATE_SIGNING_KEY) without signingAlg: the sign span names RS256", async () => {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const jwk = { ...(privateKey.export({ format: "jwk" }) as Record<string, unknown>), alg: "RS256", kid: "main" };
  const h = await harness({ tracer: provider.getTracer("t"), signingKey: jwk as never });
  const { header, span } = await signAlgOf(h);
  expect(header).toBe("RS256");
  expect(span).toEqual([header]);
});

it("signingAlg changed from ES256 to PS256 on a store whose ES256 key still signs: the sign span names ES256", async () => {
  const storage = createMemoryStorage();
  const before = await harness({ storage });
  await before.app.jwks(); // an ES256 key is made and stored
  const app = createPlantgate({ storage, clock: before.clock.now, passwordHashIterations: 1000, logger: { error() {}, warn() {} }, tracer: provider.getTracer("t"), signingAlg: "PS256" });
  const { header, span } = await signAlgOf({ ...before, app });
  expect(header).toBe("ES256");
  expect(span).toEqual([header]);
});

it("a signer with its own alg (ES384) and signingAlg left at ES256: the sign span names ES384", async () => {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-384" });
  const signer: SigningKeySigner = {
    alg: "ES384",
    publicJwk: publicKey.export({ format: "jwk" }) as never,
    sign: (data) => new Uint8Array(nodeSign("sha384", data, { key: privateKey, dsaEncoding: "ieee-p1363" })),
  };
  const h = await harness({ tracer: provider.getTracer("t"), signer });
  const { header, span } = await signAlgOf(h);
  expect(header).toBe("ES384");
  expect(span).toEqual([header]);
});
