// `lru-cache` in tspto's browser build (scripts/build-browser.mjs maps the package here): the
// jit's in-memory cache of specializations needs only get/set/has/clear/size with a bound, which
// a Map in recency order gives in a few lines (the package is 18 KB minified).
export class LRUCache<K, V> {
  readonly max: number;
  readonly #m = new Map<K, V>();
  constructor(opts: { max: number }) {
    this.max = opts.max;
  }
  get size(): number { return this.#m.size; }
  has(k: K): boolean { return this.#m.has(k); }
  get(k: K): V | undefined {
    if (!this.#m.has(k)) return undefined;
    const v = this.#m.get(k)!;
    this.#m.delete(k);
    this.#m.set(k, v);
    return v;
  }
  set(k: K, v: V): this {
    this.#m.delete(k);
    this.#m.set(k, v);
    if (this.#m.size > this.max) this.#m.delete(this.#m.keys().next().value as K);
    return this;
  }
  delete(k: K): boolean { return this.#m.delete(k); }
  clear(): void { this.#m.clear(); }
}
