// node:module in tspto's browser build: there is no require(); what asks for one (the native
// addon, Dawn, package.json lookups) is Node-only and fails with the same error as a missing package.
export const builtinModules: string[] = [];
export function createRequire(_from: string | URL): ((id: string) => never) & { resolve(id: string): never } {
  const fail = (id: string): never => {
    const e = new Error(`Cannot find module '${id}' (tspto's browser build has no require(): this part of tspto runs in Node only)`) as Error & { code: string };
    e.code = "MODULE_NOT_FOUND";
    throw e;
  };
  return Object.assign(fail, { resolve: fail });
}
export default { builtinModules, createRequire };
