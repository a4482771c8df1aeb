// tspto in a browser, first part (issue 23): the webgpu platform over navigator.gpu running
// programs lowered ahead of time, host tensors and their checks. Everything this module loads
// is free of Node built-ins (test/architecture/browser_paths.test.ts); test/browser/ runs it in
// headless Chromium. Not here yet: pl.jit / ChipWorker in the page (the front end parses with
// the TypeScript compiler and the runtime keeps artifacts in directories).
export { BrowserWebGpu } from "./targets/webgpu/browser.js";
export { ArgKind } from "./targets/target.js";
export { Program } from "./ir/index.js";
export { TsptoError } from "./ir/index.js";
export { HostTensor, tensor, zeros, randn, assertClose } from "./runtime/host/index.js";
