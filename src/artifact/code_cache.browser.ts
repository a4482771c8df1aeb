// The code cache in tspto's browser build: a page has no CommonJS modules to cache.
export const lastCodeCache: { file: string; hit: boolean; wrote: boolean } | null = null;
export function requireWithCodeCache(_file: string, _warm?: (exports: unknown) => void): unknown {
  return null;
}
