// dtype numerics are defined in the IR room (the lowest layer); re-exported for the runtime.
export * from "../ir/dtype.js";
