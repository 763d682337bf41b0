#!/usr/bin/env node
import { runCli } from "./cli.js";

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) return "";
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

process.exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  readStdin,
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
});
