// Tensor extents in generated C++: a static dimension is a number (folded at compile time), a
// dynamic one the C++ local holding its extent (passed at launch, see native/include/tspto_abi.h).
// Products and strides fold the numbers and multiply the rest at run time.

/** One extent: a number (static) or a C++ int64 expression (dynamic). */
export type CDim = number | string;

/** a * b, folded when both are numbers. */
export function cmul(a: CDim, b: CDim): CDim {
  if (typeof a === "number" && typeof b === "number") return a * b;
  if (a === 1) return b;
  if (b === 1) return a;
  return `${typeof a === "number" ? a : `(${a})`} * ${typeof b === "number" ? b : `(${b})`}`;
}

/** Row-major strides of `dims`. */
export function cstrides(dims: readonly CDim[]): CDim[] {
  const s: CDim[] = new Array<CDim>(dims.length).fill(1);
  for (let i = dims.length - 2; i >= 0; i--) s[i] = cmul(s[i + 1], dims[i + 1]);
  return s;
}

/** The product of `dims`. */
export const cnumel = (dims: readonly CDim[]): CDim => dims.reduce<CDim>((a, b) => cmul(a, b), 1);

/** a - b as C++ (for window bounds). */
export const csub = (a: CDim, b: CDim): CDim => (typeof a === "number" && typeof b === "number" ? a - b : `(${a}) - ${typeof b === "number" ? b : `(${b})`}`);

/** An extent as C++ source. */
export const cdim = (d: CDim): string => (typeof d === "number" ? String(d) : `(${d})`);

export const isStatic = (dims: readonly CDim[]): dims is readonly number[] => dims.every((d) => typeof d === "number");
