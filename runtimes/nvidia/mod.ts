/**
 * NVIDIA GPUs: the bounded XML parser and the `nvidia-smi -q -x` / `-L` readers that make the GPU inventory, the
 * real {@link NvidiaSmi} GPU tool, and the sim role's file-backed {@link FakeGpuTool} on a simulated HGX board.
 *
 * @module
 */
export { type FakeGpuState, FakeGpuTool } from "./fake_gpu_tool.ts";
export { HGX_BUSES, hgxInventory, type HgxMigLayout } from "./hgx.ts";
export {
  type CommandRunner,
  denoRunner,
  MAX_SMI_OUTPUT,
  NvidiaSmi,
  type NvidiaSmiOptions,
  readPciNumaNode,
  type RunResult,
  sysfsBdf,
} from "./nvidia_smi.ts";
export { type MigUuidMap, parseSmiList, withMigUuids } from "./smi_list.ts";
export { renderSmiList, renderSmiXml } from "./smi_render.ts";
export { MAX_GPUS, MAX_MIG_DEVICES, parseSmiXml, SmiOutputError } from "./smi_xml.ts";
export {
  child,
  childrenNamed,
  DEFAULT_XML_LIMITS,
  parseXml,
  textAt,
  type XmlElement,
  type XmlLimits,
  type XmlRefusal,
  XmlRefused,
} from "./xml.ts";
