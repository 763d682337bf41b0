import { startServer } from "./server.js";

try {
  const server = await startServer(process.env);
  console.log(`plantgate listening on ${server.url}`);
  console.log(`  store:           ${server.store}`);
  console.log(`  token endpoint:  POST ${server.url}/UserService/connect/token`);
  console.log(`  metadata:        GET  ${server.url}/.well-known/oauth-authorization-server`);
  if (server.consoleUrl) console.log(`  console:         ${server.consoleUrl}`);
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
