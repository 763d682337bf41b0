import { randomBytes } from "node:crypto";
import { writeSync } from "node:fs";
import { mkdir, open, rename, unlink, type FileHandle } from "node:fs/promises";
import { dirname, join } from "node:path";

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

// Off a terminal the demo credentials go to this file. Its draft is made before the demo client is
// (DemoHooks.beforeDemo), so a start that could not write it fails with nothing made; until
// 2026-11-30 the client was made first, and a ./data that could not be written (a read-only working
// directory, a container's non-root user) lost the secret for good: the next start, finding a
// client, made no demo. The secrets go into the draft only once the start has succeeded.
const credentialsFile = join(process.cwd(), "data", "demo-credentials.txt");
let credentialsDraft: { path: string; handle: FileHandle } | null = null;

// The server's modules (plantgate, the storage drivers, Express: seconds under tsx on a loaded machine)
// load only now, with the handlers above set: until 2026-12-02 they were static imports, loaded
// before any line here ran, and a signal while they loaded ended the process by the default action,
// exit 143. Such a signal now ends it with exit 0 before anything is opened.
const { startExpressServer } = await import("./server.js");
if (stopRequested) process.exit(0);

try {
  const server = await startExpressServer(process.env, {}, {}, { beforeDemo: prepareCredentialsFile });
  console.log(`plantgate (Express) listening on ${server.url}, mounted at ${server.mountPath}`);
  console.log(`  store:           ${server.store}`);
  console.log(`  token endpoint:  POST ${server.baseUrl}/UserService/connect/token`);
  console.log(`  metadata:        GET  ${server.baseUrl}/.well-known/oauth-authorization-server`);
  if (server.consoleUrl) console.log(`  console:         ${server.consoleUrl}`);
  console.log(`  own route:       GET  ${server.url}/health`);
  if (server.metricsUrl) console.log(`  metrics:         ${server.metricsUrl}`);
  if (server.demo) await announceDemo(server.demo);
  else await dropCredentialsDraft();
  stopServer = () => {
    server.close().then(() => process.exit(0), () => process.exit(1));
  };
  if (stopRequested) stopServer();
} catch (error) {
  await dropCredentialsDraft();
  console.error(error instanceof Error ? error.message : "failed to start");
  process.exit(1);
}

/**
 * Off a terminal, makes the credentials file's draft: ./data (0700 when new) and a new file of our
 * own in it (O_EXCL: never through a symlink, never into someone's existing file, created 0600 before
 * a byte is in it), held open. A failure fails the start before the demo is made.
 */
async function prepareCredentialsFile(): Promise<void> {
  if (process.stdout.isTTY) return;
  // Not named by the pid alone: a draft left by a start killed here (SIGKILL, the machine gone)
  // under the same pid (a container's process has the same one each time) failed every later
  // start with EEXIST until it was removed by hand (until 2026-11-30).
  const path = `${credentialsFile}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    await mkdir(dirname(credentialsFile), { recursive: true, mode: 0o700 });
    credentialsDraft = { path, handle: await open(path, "wx", 0o600) };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `cannot write the demo credentials to ${credentialsFile} (${reason}); no demo client or user was made: start where ./data can be written, or set PLANTGATE_BOOTSTRAP_CLIENT_ID/_SECRET and PLANTGATE_BOOTSTRAP_USERNAME/_PASSWORD`,
    );
  }
}

/** Removes the draft (empty: the secrets go in only after a successful start), if one was made. */
async function dropCredentialsDraft(): Promise<void> {
  const draft = credentialsDraft;
  credentialsDraft = null;
  if (!draft) return;
  await draft.handle.close().catch(() => undefined);
  await unlink(draft.path).catch(() => undefined);
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
  console.log("Created a demo client and user; stdout is not a terminal (it may be kept as a log), so their secret and password are not printed:");
  console.log(`  client_id=${demo.clientId}\n  username=${demo.username}`);
  const draft = credentialsDraft;
  try {
    if (!draft) throw new Error("no draft file was made");
    // Into the file we made and hold open, then renamed over whatever was at the final path.
    await draft.handle.writeFile(secrets);
    await draft.handle.close();
    await rename(draft.path, credentialsFile);
    credentialsDraft = null;
    console.log(`  client_secret and password: ${credentialsFile} (mode 0600; shown only there, delete it once read)`);
  } catch (error) {
    await dropCredentialsDraft();
    console.log(`  could not write ${credentialsFile} (${error instanceof Error ? error.message : String(error)}): the demo secret and password are lost; set PLANTGATE_BOOTSTRAP_* instead`);
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
