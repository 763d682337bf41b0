import { createMemoryStorage, createPlantgate } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { nodeCrypto } from "../src/index.js";

const enc = new TextEncoder();
const INFO = enc.encode("plantgate refresh-token replay v1");

/** Web Crypto's HKDF-SHA-256 (empty salt) to an AES-256-GCM key: what core does without a provider. */
async function webKey(secret: string, usage: "encrypt" | "decrypt"): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey("raw", enc.encode(secret), "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey({ name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: INFO }, material, { name: "AES-GCM", length: 256 }, false, [usage]);
}

describe("nodeCrypto().hkdfAesGcm", () => {
  const { hkdfAesGcm } = nodeCrypto();
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const aad = enc.encode("stored-hash");
  const plain = enc.encode('{"access_token":"a.b.c","refresh_token":"r"}');

  it("seals what Web Crypto opens, and opens what Web Crypto seals (same bytes either way)", async () => {
    const sealed = hkdfAesGcm.encrypt(enc.encode("the-old-refresh-token"), INFO, iv, aad, plain);
    const web = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: aad }, await webKey("the-old-refresh-token", "encrypt"), plain));
    expect(Buffer.from(sealed).equals(Buffer.from(web))).toBe(true);
    const opened = await crypto.subtle.decrypt({ name: "AES-GCM", iv, additionalData: aad }, await webKey("the-old-refresh-token", "decrypt"), sealed as BufferSource);
    expect(new Uint8Array(opened)).toEqual(plain);
    expect(Buffer.from(hkdfAesGcm.decrypt(enc.encode("the-old-refresh-token"), INFO, iv, aad, web)!).equals(Buffer.from(plain))).toBe(true);
  });

  it("opens nothing for another token, other associated data, a changed byte or a short input", () => {
    const sealed = hkdfAesGcm.encrypt(enc.encode("token-a"), INFO, iv, aad, plain);
    expect(hkdfAesGcm.decrypt(enc.encode("token-b"), INFO, iv, aad, sealed)).toBeNull();
    expect(hkdfAesGcm.decrypt(enc.encode("token-a"), INFO, iv, enc.encode("other-hash"), sealed)).toBeNull();
    const flipped = Uint8Array.from(sealed);
    flipped[0] = flipped[0]! ^ 1;
    expect(hkdfAesGcm.decrypt(enc.encode("token-a"), INFO, iv, aad, flipped)).toBeNull();
    expect(hkdfAesGcm.decrypt(enc.encode("token-a"), INFO, iv, aad, sealed.subarray(0, 15))).toBeNull();
  });

  it("a refresh retried within the grace window gets the same answer across an instance with nodeCrypto() and one without", async () => {
    const storage = createMemoryStorage();
    const base = { storage, issuer: "https://auth.example.test", passwordHashIterations: 1000, logger: { error() {}, warn() {} } };
    const withNode = createPlantgate({ ...base, crypto: nodeCrypto() });
    const webOnly = createPlantgate(base);
    const { clientSecret } = await withNode.admin.createClient({ clientId: "app" });
    await withNode.admin.createAccount({ username: "ann", password: "ann-password-1" });
    const post = (app: typeof withNode, body: Record<string, string>) =>
      app.fetch(
        new Request("https://auth.example.test/UserService/connect/token", {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`app:${clientSecret}`)}` },
          body: new URLSearchParams(body).toString(),
        }),
      );
    const first = (await (await post(withNode, { grant_type: "password", username: "ann", password: "ann-password-1", scope: "Platform_UserAPIs offline_access" })).json()) as { refresh_token: string };
    // Sealed by nodeCrypto(), replayed through Web Crypto; then the other way round.
    const a = await post(withNode, { grant_type: "refresh_token", refresh_token: first.refresh_token });
    const b = await post(webOnly, { grant_type: "refresh_token", refresh_token: first.refresh_token });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    const answerA = (await a.json()) as { refresh_token: string; access_token: string };
    expect(await b.json()).toEqual(answerA);
    const c = await post(webOnly, { grant_type: "refresh_token", refresh_token: answerA.refresh_token });
    const d = await post(withNode, { grant_type: "refresh_token", refresh_token: answerA.refresh_token });
    expect(c.status).toBe(200);
    expect(await d.json()).toEqual(await c.json());
  });
});
