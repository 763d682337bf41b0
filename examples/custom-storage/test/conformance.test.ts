import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describeStorageConformance } from "@plantgate/storage-testing";
import { createJsonFileStorage, type JsonFileStorage } from "../src/json-file-storage.js";

// A fresh temp folder (and so a fresh, not yet existing file) per test.
describeStorageConformance("JSON file storage", {
  create: async () => createJsonFileStorage(join(await mkdtemp(join(tmpdir(), "plantgate-json-")), "store.json")),
  destroy: async (storage) => {
    const { path } = storage as JsonFileStorage;
    // Every queued write done and the lock released before the folder goes.
    await (storage as JsonFileStorage).close();
    await rm(dirname(path), { recursive: true, force: true });
  },
  // Everything persisted: the file's text, so the secrets probe looks at what is really on disk.
  rawDump: async (storage) => readFile((storage as JsonFileStorage).path, "utf8"),
});
