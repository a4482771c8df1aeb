// `tspto/capture` in the browser build: the same as in Node (src/capture.ts), texts in memory.
export { site, source } from "./capture.js";
