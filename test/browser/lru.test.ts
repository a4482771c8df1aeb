// The browser build's bounded cache (src/browser/lru-cache.ts, in place of the lru-cache package):
// least recently used first out, get refreshes, size bounded by max.
import { describe, expect, it } from "vitest";
import { LRUCache } from "../../src/browser/lru-cache.js";

describe("the browser build's LRUCache", () => {
  it("evicts the least recently used entry beyond max; get refreshes recency", () => {
    const c = new LRUCache<string, number>({ max: 2 });
    c.set("a", 1).set("b", 2);
    expect(c.get("a")).toBe(1);   // a is now the most recent
    c.set("c", 3);                // evicts b
    expect(c.has("b")).toBe(false);
    expect(c.get("a")).toBe(1);
    expect(c.get("c")).toBe(3);
    expect(c.size).toBe(2);
    c.set("a", 10);
    expect(c.get("a")).toBe(10);
    expect(c.size).toBe(2);
    c.clear();
    expect(c.size).toBe(0);
    expect(c.get("a")).toBeUndefined();
  });

  it("calls dispose for every value that leaves, as the package does (evicted, replaced, deleted, cleared)", () => {
    const gone: string[] = [];
    const c = new LRUCache<string, number>({ max: 2, dispose: (v, k) => gone.push(`${k}=${v}`) });
    c.set("a", 1).set("b", 2).set("c", 3); // a evicted
    c.set("b", 20); // b's old value replaced
    c.set("b", 20); // the same value again: nothing leaves
    c.delete("c");
    c.delete("nope");
    c.set("d", 4);
    c.clear();
    expect(gone).toEqual(["a=1", "b=2", "c=3", "b=20", "d=4"]);
  });
});
