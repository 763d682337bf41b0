import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Express } from "express";
import { afterEach } from "vitest";
import { createPlantgate, type Plantgate, type PlantgateOptions } from "@plantgate/core";

const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    ),
  );
});

/** Listens on an ephemeral loopback port; closed after each test. Returns the origin. */
export async function listen(app: Express): Promise<string> {
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(0, "127.0.0.1", (error?: Error) => (error ? reject(error) : resolve(s)));
  });
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export const quiet = { error() {}, warn() {}, info() {}, debug() {}, log() {} } as unknown as Console;

export const CLIENT_ID = "express-client";
export const CLIENT_SECRET = "express-client-secret-0123456789";
export const USERNAME = "alice";
export const PASSWORD = "a long passphrase";

/** A plantgate app for mount path `basePath` with one client (all grants) and one account. */
export async function plantgateApp(options: PlantgateOptions = {}): Promise<Plantgate> {
  const app = createPlantgate({ basePath: "/auth", passwordHashIterations: 1000, logger: quiet, ...options });
  await app.admin.createClient({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET });
  await app.admin.createAccount({ username: USERNAME, password: PASSWORD, displayName: "Alice" });
  return app;
}

export function basic(id = CLIENT_ID, secret = CLIENT_SECRET): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`;
}

export function form(values: Record<string, string>): URLSearchParams {
  return new URLSearchParams(values);
}

export async function token(base: string, body: Record<string, string>): Promise<Response> {
  return fetch(`${base}/UserService/connect/token`, {
    method: "POST",
    headers: { authorization: basic() },
    body: form(body),
  });
}

export async function clientToken(base: string): Promise<string> {
  const res = await token(base, { grant_type: "client_credentials" });
  if (res.status !== 200) throw new Error(`token: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { access_token: string }).access_token;
}
