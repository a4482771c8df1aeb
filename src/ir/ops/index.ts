// Registers every op. Import for side effects.
import "./memory.js";
import "./elementwise.js";
import "./scalar.js";
export { BINARY, UNARY, newTensor } from "./elementwise.js";
