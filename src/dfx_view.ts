// The DFX swimlane of a compiled program's latest recorded launch, as data and as HTML: what a
// page (or any caller without a file viewer) shows after a launch with enableChipSwimlane. It
// reads <outputDir>/dfx_outputs/swimlane.json — on disk in Node, in the page's in-memory volume
// in the browser build — and renders it with the same view as `tspto inspect --trace`.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { TsptoRuntimeError } from "./ir/index.js";
import { DFX_DIR } from "./runtime/dfx.js";
import { parseTrace, renderTraceHtml, type TraceModel } from "./tools/trace.js";

export interface Swimlane {
  /** swimlane.json as written (Chrome trace events). */
  readonly json: unknown;
  /** The parsed tracks and tasks. */
  readonly model: TraceModel;
  /** A self-contained HTML page drawing it (put it in an iframe's srcdoc, or save it). */
  readonly html: string;
}

/** The swimlane of the latest launch of `compiled` that recorded one (RunConfig enableChipSwimlane >= 1). */
export function dfxSwimlane(compiled: { readonly outputDir: string; readonly name?: string }, title?: string): Swimlane {
  const file = join(compiled.outputDir, DFX_DIR, "swimlane.json");
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    throw new TsptoRuntimeError("E_DFX", `no swimlane recorded for ${compiled.outputDir} (${file} is missing)`, undefined,
      "launch it (awaited, on webgpu) with new RunConfig({ platform, enableChipSwimlane: 1 }) first");
  }
  const json = JSON.parse(text) as unknown;
  const model = parseTrace(json, file);
  return { json, model, html: renderTraceHtml(model, { title: title ?? `Swimlane: ${compiled.name ?? compiled.outputDir}` }) };
}
