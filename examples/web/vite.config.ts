// `npx vite examples/web` (after `npm run build`): the demo with the tspto plugin; see ./config.ts.
import { demoConfig } from "./config.js";

export default demoConfig();
