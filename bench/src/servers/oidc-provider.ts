// oidc-provider 9.x: client credentials with RFC 9068 JWT access tokens signed ES256. Resource
// indicators are what make it issue JWTs instead of opaque tokens: every request gets the default
// resource, whose server info asks for the "jwt" format.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import Provider from "oidc-provider";
import { exportJWK, generateKeyPair } from "jose";
import { announceReady, CLIENT_ID, CLIENT_SECRET } from "../shared.js";

const RESOURCE = "urn:plantgate-bench:api";
const { privateKey } = await generateKeyPair("ES256", { extractable: true });
const signingKey = { ...(await exportJWK(privateKey)), kid: "bench-es256", alg: "ES256", use: "sig" };

let handler: ((req: IncomingMessage, res: ServerResponse) => void) | null = null;
const server = createServer((req, res) => {
  if (handler) handler(req, res);
  else {
    res.statusCode = 503;
    res.end();
  }
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const address = server.address();
const port = typeof address === "object" && address ? address.port : 0;

const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: [
    {
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
      grant_types: ["client_credentials"],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: "client_secret_basic",
      // Only an ES256 key is configured, and the default (RS256) must be signable.
      id_token_signed_response_alg: "ES256",
    },
  ],
  jwks: { keys: [signingKey] },
  scopes: ["api"],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => RESOURCE,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({
        scope: "api",
        audience: RESOURCE,
        accessTokenTTL: 7200,
        accessTokenFormat: "jwt",
        jwt: { sign: { alg: "ES256" } },
      }),
    },
  },
});
handler = provider.callback();
announceReady({ port });
