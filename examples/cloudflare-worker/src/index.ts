// The full Worker: the API reference page at /docs and the console's page (the console itself is on
// with PLANTGATE_CONSOLE=1). For the minimal Worker, drop both: `export default createWorker();`
import { createWorker } from "@plantgate/cloudflare";
import { consolePage } from "@plantgate/console";
import { swaggerUi } from "@plantgate/docs";

export default createWorker({ docs: swaggerUi(), console: { enabled: false, page: consolePage() } });
