import { createWorker } from "@plantgate/cloudflare";

export default createWorker();
