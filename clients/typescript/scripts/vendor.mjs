// Copy the browser build into the dashboard: server/web/market-client.js (run `npm run vendor`).
//
// It sits beside the dashboard's own modules, not in vendor/: vendor/ files are cached as immutable
// behind a ?v=<hash> that index.html adds, but this file is reached through module imports, which
// carry no hash; beside app.js it is revalidated by ETag on each load like the app's own code.

import { copyFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

const from = fileURLToPath(new URL("../dist/browser/market-client.js", import.meta.url));
const to = fileURLToPath(new URL("../../../server/web/market-client.js", import.meta.url));
await copyFile(from, to);
console.log(`copied ${from} -> ${to}`);
