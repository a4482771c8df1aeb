// `lru-cache` in tspto's browser build (scripts/build-browser.mjs maps the package here): the
// jit's in-memory cache of specializations needs only get/set/has/clear/size with a bound, which
// a Map in recency order gives in a few lines (the package is 18 KB minified); `dispose` is
// called for a value that leaves (evicted, replaced, deleted, cleared), as the package does.
export class LRUCache<K, V> {
  readonly max: number;
  readonly #m = new Map<K, V>();
  readonly #dispose: ((v: V, k: K) => void) | undefined;
  constructor(opts: { max: number; dispose?: (v: V, k: K) => void }) {
    this.max = opts.max;
    this.#dispose = opts.dispose;
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
    const old = this.#m.get(k);
    const had = this.#m.delete(k);
    this.#m.set(k, v);
    if (had && old !== v) this.#dispose?.(old as V, k);
    if (this.#m.size > this.max) this.delete(this.#m.keys().next().value as K);
    return this;
  }
  delete(k: K): boolean {
    if (!this.#m.has(k)) return false;
    const v = this.#m.get(k) as V;
    this.#m.delete(k);
    this.#dispose?.(v, k);
    return true;
  }
  clear(): void {
    const all = [...this.#m];
    this.#m.clear();
    if (this.#dispose) for (const [k, v] of all) this.#dispose(v, k);
  }
}
