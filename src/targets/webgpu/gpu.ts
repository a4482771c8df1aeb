// The part of the WebGPU API the webgpu device uses, as structural types (the package does not
// depend on @webgpu/types), and the flag values the specification fixes (GPUBufferUsage,
// GPUMapMode, GPUShaderStage: the same in every implementation, so no global is needed).

export const BufferUsage = { MAP_READ: 0x1, MAP_WRITE: 0x2, COPY_SRC: 0x4, COPY_DST: 0x8, UNIFORM: 0x40, STORAGE: 0x80, QUERY_RESOLVE: 0x200 } as const;
export const MapMode = { READ: 0x1, WRITE: 0x2 } as const;
export const ShaderStage = { COMPUTE: 0x4 } as const;

export interface GpuBuffer {
  readonly size: number;
  mapAsync(mode: number, offset?: number, size?: number): Promise<void>;
  getMappedRange(offset?: number, size?: number): ArrayBuffer;
  unmap(): void;
  destroy(): void;
}
export interface GpuQuerySet { destroy(): void }
export interface GpuBindGroupLayout { readonly __brand?: "GPUBindGroupLayout" }
export interface GpuPipelineLayout { readonly __brand?: "GPUPipelineLayout" }
export interface GpuBindGroup { readonly __brand?: "GPUBindGroup" }
export interface GpuCompilationMessage { readonly message: string; readonly type: string; readonly lineNum: number; readonly linePos: number }
export interface GpuShaderModule { getCompilationInfo(): Promise<{ readonly messages: readonly GpuCompilationMessage[] }> }
export interface GpuComputePipeline { readonly __brand?: "GPUComputePipeline" }
export interface GpuComputePass {
  setPipeline(p: GpuComputePipeline): void;
  setBindGroup(index: number, group: GpuBindGroup, dynamicOffsets?: readonly number[] | Uint32Array, start?: number, length?: number): void;
  dispatchWorkgroups(x: number, y?: number, z?: number): void;
  end(): void;
}
export interface GpuCommandBuffer { readonly __brand?: "GPUCommandBuffer" }
export interface GpuCommandEncoder {
  beginComputePass(desc?: { timestampWrites?: { querySet: GpuQuerySet; beginningOfPassWriteIndex?: number; endOfPassWriteIndex?: number } }): GpuComputePass;
  copyBufferToBuffer(src: GpuBuffer, srcOffset: number, dst: GpuBuffer, dstOffset: number, size: number): void;
  clearBuffer(buffer: GpuBuffer, offset?: number, size?: number): void;
  resolveQuerySet(q: GpuQuerySet, first: number, count: number, dst: GpuBuffer, dstOffset: number): void;
  finish(): GpuCommandBuffer;
}
export interface GpuQueue {
  submit(buffers: readonly GpuCommandBuffer[]): void;
  writeBuffer(buffer: GpuBuffer, offset: number, data: ArrayBufferView | ArrayBuffer, dataOffset?: number, size?: number): void;
  onSubmittedWorkDone(): Promise<void>;
}
export interface GpuError { readonly message: string }
export interface GpuDevice {
  readonly queue: GpuQueue;
  readonly features: { has(name: string): boolean };
  readonly limits: Record<string, number>;
  readonly lost: Promise<{ readonly reason: string; readonly message: string }>;
  /** `preventDefault()`: the implementation does not print / log the error too. */
  onuncapturederror: ((ev: { error: GpuError; preventDefault?(): void }) => void) | null;
  createBuffer(desc: { size: number; usage: number; mappedAtCreation?: boolean; label?: string }): GpuBuffer;
  createShaderModule(desc: { code: string; label?: string }): GpuShaderModule;
  createBindGroupLayout(desc: { entries: readonly unknown[] }): GpuBindGroupLayout;
  createPipelineLayout(desc: { bindGroupLayouts: readonly GpuBindGroupLayout[] }): GpuPipelineLayout;
  createComputePipeline(desc: { layout: GpuPipelineLayout; compute: { module: GpuShaderModule; entryPoint: string }; label?: string }): GpuComputePipeline;
  createBindGroup(desc: { layout: GpuBindGroupLayout; entries: readonly unknown[] }): GpuBindGroup;
  createCommandEncoder(): GpuCommandEncoder;
  createQuerySet(desc: { type: "timestamp"; count: number }): GpuQuerySet;
  pushErrorScope(filter: "validation" | "out-of-memory" | "internal"): void;
  popErrorScope(): Promise<GpuError | null>;
  destroy(): void;
}
export interface GpuAdapter {
  readonly features: { has(name: string): boolean; [Symbol.iterator]?(): Iterator<string> };
  readonly limits: Record<string, number>;
  readonly info?: { readonly vendor?: string; readonly architecture?: string; readonly device?: string; readonly description?: string };
  readonly isFallbackAdapter?: boolean;
  requestDevice(desc?: { requiredFeatures?: readonly string[]; requiredLimits?: Record<string, number>; label?: string }): Promise<GpuDevice>;
}
export interface Gpu { requestAdapter(opts?: { powerPreference?: "low-power" | "high-performance" }): Promise<GpuAdapter | null> }
