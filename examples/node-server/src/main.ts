import { writeSync } from "node:fs";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { startServer } from "./server.js";

// The start lines go to stdout through console.log; a stdout that fails (a full disk, /dev/full, a
// reader gone) emits an 'error' on process.stdout after console.log has returned, which would end
// the process with the server already serving. Said once on stderr instead; the server runs on (its
// JSON log lines have their own writer, which reports and recovers on its own).
process.stdout.on("error", startLinesLost);

// SIGINT/SIGTERM stop the server: set before the start, so that one arriving while it runs (the
// store opening, migrations, the bootstrap) lets the start end, then closes the server and the store
// and exits 0. Until 2026-11-30 they were set only after the demo credentials were written: a
// signal before that killed the process, the store left open, and when it came after the demo
// client was made (the "listening" line) the credentials were never written and the next start,
// finding a client, made none: they were lost. A second signal of the same kind ends the process
// at once (the default action).
let stopRequested = false;
let stopServer: (() => void) | null = null;
const onStopSignal = () => {
  if (stopServer) stopServer();
  else stopRequested = true;
};
process.once("SIGINT", onStopSignal);
process.once("SIGTERM", onStopSignal);

try {
  const server = await startServer(process.env);
  console.log(`plantgate listening on ${server.url}`);
  console.log(`  store:           ${server.store}`);
  console.log(`  token endpoint:  POST ${server.url}/UserService/connect/token`);
  console.log(`  metadata:        GET  ${server.url}/.well-known/oauth-authorization-server`);
  if (server.consoleUrl) console.log(`  console:         ${server.consoleUrl}`);
  if (server.metricsUrl) console.log(`  metrics:         ${server.metricsUrl}`);
  if (server.demo) await announceDemo(server.demo);
  stopServer = () => {
    server.close().then(() => process.exit(0), () => process.exit(1));
  };
  if (stopRequested) stopServer();
} catch (error) {
  console.error(error instanceof Error ? error.message : "failed to start");
  process.exit(1);
}

/**
 * The demo client and user, shown once at creation (the store keeps only hashes). On a terminal
 * they are printed; otherwise stdout is likely kept as a log (a container, a service manager), so
 * the secret and the password go to ./data/demo-credentials.txt (mode 0600) and stdout names the file.
 */
async function announceDemo(demo: { clientId: string; clientSecret: string; username: string; password: string }): Promise<void> {
  const secrets = `client_id=${demo.clientId}\nclient_secret=${demo.clientSecret}\nusername=${demo.username}\npassword=${demo.password}\n`;
  if (process.stdout.isTTY) {
    console.log("Created a demo client and user (shown only now):");
    console.log(secrets.replace(/^/gm, "  ").trimEnd());
    return;
  }
  const file = join(process.cwd(), "data", "demo-credentials.txt");
  console.log("Created a demo client and user; stdout is not a terminal (it may be kept as a log), so their secret and password are not printed:");
  console.log(`  client_id=${demo.clientId}\n  username=${demo.username}`);
  try {
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    // A new file of our own (O_EXCL: never through a symlink, never into someone's existing file,
    // created 0600 before a byte is in it), then renamed over whatever was at that path.
    const draft = `${file}.${process.pid}.tmp`;
    await writeFile(draft, secrets, { mode: 0o600, flag: "wx" });
    await rename(draft, file);
    console.log(`  client_secret and password: ${file} (mode 0600; shown only there, delete it once read)`);
  } catch (error) {
    console.log(`  could not write ${file} (${error instanceof Error ? error.message : String(error)}): the demo secret and password are lost; set PLANTGATE_BOOTSTRAP_* instead`);
  }
}

let startLinesLostSaid = false;
function startLinesLost(error: NodeJS.ErrnoException): void {
  if (startLinesLostSaid) return;
  startLinesLostSaid = true;
  try {
    writeSync(2, `plantgate: writing the start lines to stdout failed (${error.code ?? error.message}); they are lost, the server runs on\n`);
  } catch {
    // stderr failing as well: nothing left to tell.
  }
}
