// Types of scripts/build-browser.mjs for the tests and the bench.
export function browserGraph(): { name: string; setup(b: unknown): void };
export function browserOptions(extra?: object): Record<string, unknown>;
export const BROWSER_ENTRIES: Record<string, string>;
