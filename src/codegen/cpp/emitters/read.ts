// Scalar reads (tile.read, tensor.read), tensor.dim and the orchestration's tensor.create.
import { DTYPE_BYTES, type DType, type TensorType, TsptoCompileError, numel, shapeStr } from "../../../ir/index.js";
import { type CExpr, intLit, loadConv, scalarCType, storageCType } from "./ctypes.js";
import { def } from "./table.js";
import { strides } from "./memory.js";
import { cdim, cmul, cnumel, cstrides } from "./dims.js";
import { exprLabel, tileOperand, tileWindow } from "./tiles.js";

// read: one element as a scalar (tiles in scratch; tensors in device memory, in kernels)
const scalarOfElem = (d: DType, code: string): CExpr => {
  const ct = scalarCType(d);
  return { code: ct === "bool" ? `(${code} != 0)` : `(${ct})${code}`, ctype: ct };
};
def("tile.read", {
  kind: "scalar-stmt",
  emit(ctx, call) {
    const x = tileOperand(call.args[0]);
    const idx = tileWindow(ctx, "read", exprLabel(call.args[0]), call.args[1], x.shape.map(() => 1), x.shape, call.span);
    const e = ctx.elements(call.args[0]);
    const v = scalarOfElem(x.dtype, e(idx.map((s, ax) => (strides(x.shape)[ax] === 1 ? s : `${s} * ${strides(x.shape)[ax]}`)).join(" + ")));
    const name = ctx.fresh("rd");
    ctx.line(`const ${v.ctype} ${name} = ${v.code};`);
    return { code: name, ctype: v.ctype };
  },
});
def("tensor.read", {
  kind: "scalar-stmt",
  emit(ctx, call) {
    const t = ctx.tensor(call.args[0]);
    const dims = t.dims;
    const idx = tileWindow(ctx, "read", t.label, call.args[1], dims.map(() => 1), dims, call.span, "tensor");
    const T = storageCType(t.type.dtype);
    const st = cstrides(dims);
    const at = idx.map((s, ax) => (st[ax] === 1 ? s : `${s} * ${cdim(st[ax])}`)).join(" + ");
    const v = scalarOfElem(t.type.dtype, loadConv(t.type.dtype, `((const ${T}*)${t.ptr})[${at}]`));
    const name = ctx.fresh("rd");
    ctx.line(`const ${v.ctype} ${name} = ${v.code};`);
    return { code: name, ctype: v.ctype };
  },
});

// dim: the extent of a tensor's axis (static shapes: simplify folds it to a constant first;
// a dynamic one is the function's local holding the extent passed at launch)
def("tensor.dim", {
  kind: "scalar-stmt",
  emit(ctx, call) {
    const d = ctx.tensor(call.args[0]).dims[Number(call.attrs.axis)];
    return { code: typeof d === "number" ? intLit(d) : d, ctype: "int64_t" };
  },
});

// createTensor: an orchestration-level device buffer, zero-filled, freed at the end of the launch
def("tensor.create", {
  kind: "tensor-alloc",
  emit(ctx, call, name) {
    const t = call.type as TensorType;
    // a named dimension is one of the entry's dynamic dimensions (entrySignature, src/codegen/signature.ts,
    // rejects any other name with E_DYNAMIC before code generation): its extent is known at launch
    const dims = t.shape.map((d) => {
      if (typeof d === "number") return d;
      const local = ctx.dimLocal?.(d);
      if (local === undefined) throw new TsptoCompileError("E_CODEGEN", `internal: createTensor dimension ${JSON.stringify(d)} has no extent local`, call.span);
      return local;
    });
    ctx.line(`const int64_t ${name} = rt->alloc(rt->ctx, ${cdim(cmul(cnumel(dims), DTYPE_BYTES[t.dtype]))});  // createTensor(${shapeStr(t.shape)}, ${t.dtype})`);
    ctx.line(`if (${name} == 0) ${ctx.failExit}`);
  },
});
