// Tools room: looking inside artifacts (`tspto inspect`) and rendering DFX outputs.
export { inspectArtifact, formatReport, InspectError, type InspectReport, type PassDumpInfo, type FileInfo } from "./inspect.js";
export { parseTrace, renderTraceHtml, taskTooltip, type TraceModel, type TraceTask, type TraceTrack, type TraceHtmlOptions } from "./trace.js";
export { parseDeps, layoutDeps, renderDepsHtml, type DepsModel, type DepTask, type DepEdge, type DepsLayout, type DepsHtmlOptions } from "./graph.js";
export { DfxFormatError, DFX_DIR, SWIMLANE_FILE, DEPS_FILE, SWIMLANE_HTML, DEPS_HTML } from "./dfx.js";
export { main, renderTrace, renderGraph, USAGE } from "./cli.js";
export { formatRooflineTable, parseRoofline, renderRooflineHtml, rooflineSection, rooflineSvg, limitsLine, type RooflineModel, type RooflineRowModel, type RooflineLimitsModel } from "./roofline.js";
