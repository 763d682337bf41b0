import { startExpressServer } from "./server.js";

try {
  const server = await startExpressServer(process.env);
  console.log(`plantgate (Express) listening on ${server.url}, mounted at ${server.mountPath}`);
  console.log(`  store:           ${server.store}`);
  console.log(`  token endpoint:  POST ${server.baseUrl}/UserService/connect/token`);
  console.log(`  metadata:        GET  ${server.baseUrl}/.well-known/oauth-authorization-server`);
  console.log(`  own route:       GET  ${server.url}/health`);
  if (server.metricsUrl) console.log(`  metrics:         ${server.metricsUrl}`);
  if (server.demo) {
    // Printed once, at creation: the store keeps only hashes, so they cannot be shown again.
    console.log("Created a demo client and user (shown only now):");
    console.log(`  client_id=${server.demo.clientId}`);
    console.log(`  client_secret=${server.demo.clientSecret}`);
    console.log(`  username=${server.demo.username}`);
    console.log(`  password=${server.demo.password}`);
  }
  const stop = () => {
    server.close().then(() => process.exit(0), () => process.exit(1));
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
} catch (error) {
  console.error(error instanceof Error ? error.message : "failed to start");
  process.exit(1);
}
