// Child of unix-socket-fd.test.ts: listens on fd 3 (a Unix socket made by the parent, as systemd
// socket activation hands one over), answers one token request with trustedProxies ["unix"], and
// prints the address() of its server and the token.issued event's client_ip as one JSON line.
import { createServer } from "node:http";
import { createPlantgate, type SecurityEvent } from "@plantgate/core";
import { createRequestListener } from "../src/index.js";

const events: SecurityEvent[] = [];
const app = createPlantgate({ passwordHashIterations: 1000, trustedProxies: ["unix"], onEvent: (e) => void events.push(e) });
const { clientSecret } = await app.admin.createClient({ clientId: "unix-client" });
const server = createServer(createRequestListener(app, { origin: "http://auth.test" }));
server.on("request", (_req, res) =>
  res.on("finish", async () => {
    await app.flushEvents();
    const issued = events.find((e) => e.type === "token.issued") as { client_ip?: string | null } | undefined;
    console.log(JSON.stringify({ address: server.address(), clientIp: issued?.client_ip }));
    server.closeAllConnections();
    server.close();
  }),
);
server.listen({ fd: 3 }, () => console.log(JSON.stringify({ secret: clientSecret })));
