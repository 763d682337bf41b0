// `pnpm worker-size`: prints the size of the minified plantgate Worker bundle (raw and gzip).
import { bundleWorker } from "../src/bundle-worker.js";

await bundleWorker();
