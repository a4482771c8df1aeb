// The package version in the browser build: set when dist/browser is built
// (scripts/build-browser.mjs defines __TSPTO_VERSION__ from package.json); the compiler's
// fingerprint is its build's (the page's cache lives in memory and dies with the page).
declare const __TSPTO_VERSION__: string;
declare const __TSPTO_BUILD__: string;

export const PACKAGE_VERSION: string = typeof __TSPTO_VERSION__ === "string" ? __TSPTO_VERSION__ : "0.0.0";
export const COMPILER_FINGERPRINT: string = typeof __TSPTO_BUILD__ === "string" ? __TSPTO_BUILD__ : "browser";
