/**
 * The root configuration of a layered root (seed 002 §Root configurations): UTF-8 text, one NAME=VALUE line per
 * field, each ended by a newline, in any order, each at most once. The guest refuses every configuration but the
 * ones this table allows, an unknown field included.
 *
 * @module
 */
import { BodyError } from "./errors.ts";
import { encodeUtf8, utf8 } from "./_bytes.ts";
import { MAX_TEXT_BODY } from "./frame_kinds.ts";

const BODY = "root-config";

/** The overlay's mode. */
export type OverlayMode = "trusted-lowers" | "untrusted-lowers";
/** Whether an ext4 scratch may have a journal. */
export type ScratchJournal = "allowed" | "forbidden";

/** A decoded root configuration; absent optional fields are undefined. */
export interface RootConfig {
  readonly version: 1;
  readonly runtime: string;
  readonly agentCgroup: string;
  readonly workloadCgroup: string;
  readonly deviceTimeoutMs: number;
  readonly agentMemoryLow?: bigint;
  readonly workloadMemoryMax?: bigint;
  readonly workloadPidsMax?: bigint;
  readonly distroSectors?: bigint;
  readonly scratchSectors?: bigint;
  readonly firstPartitionBound?: bigint;
  readonly overlayMode?: OverlayMode;
  readonly scratchJournal?: ScratchJournal;
  readonly mappingCount?: number;
}

/** The bound of a GPT disk's first partition when the configuration names none: 64 KiB. */
export const DEFAULT_FIRST_PARTITION_BOUND = 64n * 1024n;
/** The longest wait for a block device: 600,000 ms. */
export const MAX_DEVICE_TIMEOUT_MS = 600_000;
/** The most mappings of a host's mapping table. */
export const MAX_MAPPINGS = 4096;
const MAX_PATH = 4095;
const U64_MAX = (1n << 64n) - 1n;

/** What the host program sends unless its caller names other values (`RootConfig::default()`). */
export function defaultRootConfig(): RootConfig {
  return {
    version: 1,
    runtime: "/run/runtime-adapter",
    agentCgroup: "/sys/fs/cgroup/agent",
    workloadCgroup: "/sys/fs/cgroup/workload",
    deviceTimeoutMs: 30_000,
    agentMemoryLow: 16n * 1024n * 1024n,
    workloadMemoryMax: 128n * 1024n * 1024n,
    workloadPidsMax: 128n,
  };
}

type Field = {
  readonly name: string;
  readonly key: keyof RootConfig;
  readonly required: boolean;
  readonly kind: "version" | "path" | "timeout" | "positive" | "overlay" | "journal" | "mappings";
};

/** The seed's field table, in its order. */
export const ROOT_CONFIG_FIELDS: readonly Field[] = [
  { name: "version", key: "version", required: true, kind: "version" },
  { name: "runtime", key: "runtime", required: true, kind: "path" },
  { name: "agent-cgroup", key: "agentCgroup", required: true, kind: "path" },
  { name: "workload-cgroup", key: "workloadCgroup", required: true, kind: "path" },
  { name: "device-timeout-ms", key: "deviceTimeoutMs", required: true, kind: "timeout" },
  { name: "agent-memory-low", key: "agentMemoryLow", required: false, kind: "positive" },
  { name: "workload-memory-max", key: "workloadMemoryMax", required: false, kind: "positive" },
  { name: "workload-pids-max", key: "workloadPidsMax", required: false, kind: "positive" },
  { name: "distro-sectors", key: "distroSectors", required: false, kind: "positive" },
  { name: "scratch-sectors", key: "scratchSectors", required: false, kind: "positive" },
  { name: "first-partition-bound", key: "firstPartitionBound", required: false, kind: "positive" },
  { name: "overlay-mode", key: "overlayMode", required: false, kind: "overlay" },
  { name: "scratch-journal", key: "scratchJournal", required: false, kind: "journal" },
  { name: "mapping-count", key: "mappingCount", required: false, kind: "mappings" },
];

function refuse(msg: string): never {
  throw new BodyError(BODY, msg);
}

/** A decimal without sign or leading zeros, as a u64. */
function decimal(name: string, v: string): bigint {
  if (!/^(0|[1-9][0-9]*)$/.test(v)) refuse(`${name} is not a decimal number: ${JSON.stringify(v)}`);
  const n = BigInt(v);
  if (n > U64_MAX) refuse(`${name} ${v} is out of range`);
  return n;
}

/**
 * Checks a guest path: absolute and canonical, at most 4,095 bytes, without NUL or newline, not /, without an
 * empty, `.` or `..` component, or a trailing /. Returns the problem, or null.
 */
export function guestPathProblem(p: string): string | null {
  if (encodeUtf8(p).length > MAX_PATH) return "longer than 4,095 bytes";
  if (p.includes("\0") || p.includes("\n")) return "holds a NUL or a newline";
  if (!p.startsWith("/")) return "not absolute";
  if (p === "/") return "is /";
  if (p.endsWith("/")) return "has a trailing /";
  for (const c of p.slice(1).split("/")) {
    if (c === "" || c === "." || c === "..") return `has a ${c === "" ? "empty" : JSON.stringify(c)} component`;
  }
  return null;
}

function parent(p: string): string {
  const i = p.lastIndexOf("/");
  return i === 0 ? "/" : p.slice(0, i);
}

/** Checks the rules across fields: the runtime's reserved characters and the sibling cgroups. */
export function checkRootConfig(c: RootConfig): void {
  for (
    const [name, p] of [["runtime", c.runtime], ["agent-cgroup", c.agentCgroup], [
      "workload-cgroup",
      c.workloadCgroup,
    ]] as const
  ) {
    const problem = guestPathProblem(p);
    if (problem !== null) refuse(`${name} ${JSON.stringify(p)} ${problem}`);
  }
  if (/[,:\\=]/.test(c.runtime)) refuse(`runtime ${JSON.stringify(c.runtime)} holds a character the overlay reserves`);
  if (c.agentCgroup === c.workloadCgroup) refuse("the agent and workload cgroups are the same");
  if (parent(c.agentCgroup) !== parent(c.workloadCgroup)) refuse("the agent and workload cgroups are not siblings");
  if (parent(c.agentCgroup) === "/") refuse("the cgroups' parent is /");
  if (!Number.isInteger(c.deviceTimeoutMs) || c.deviceTimeoutMs < 0 || c.deviceTimeoutMs > MAX_DEVICE_TIMEOUT_MS) {
    refuse(`device-timeout-ms ${c.deviceTimeoutMs} is beyond 600,000`);
  }
  for (const f of ROOT_CONFIG_FIELDS) {
    const v = c[f.key];
    if (f.kind === "positive" && v !== undefined && ((v as bigint) <= 0n || (v as bigint) > U64_MAX)) {
      refuse(`${f.name} must be a positive u64`);
    }
  }
  if (c.mappingCount !== undefined && (c.mappingCount < 1 || c.mappingCount > MAX_MAPPINGS)) {
    refuse(`mapping-count ${c.mappingCount} is not between 1 and 4,096`);
  }
}

/** Decodes a RootConfig body; refuses with a {@link BodyError} naming the rule. */
export function decodeRootConfig(body: Uint8Array): RootConfig {
  if (body.length > MAX_TEXT_BODY) refuse(`longer than ${MAX_TEXT_BODY} bytes`);
  const text = utf8(body, BODY);
  if (text.length > 0 && !text.endsWith("\n")) refuse("the last line has no newline");
  const out: Record<string, unknown> = {};
  const seen = new Set<string>();
  for (const line of text.split("\n").slice(0, -1)) {
    const eq = line.indexOf("=");
    if (eq < 0) refuse(`line without =: ${JSON.stringify(line)}`);
    const name = line.slice(0, eq);
    const value = line.slice(eq + 1);
    const f = ROOT_CONFIG_FIELDS.find((x) => x.name === name);
    if (f === undefined) refuse(`unknown field ${JSON.stringify(name)}`);
    if (seen.has(name)) refuse(`field ${name} appears twice`);
    seen.add(name);
    switch (f.kind) {
      case "version":
        if (value !== "1") refuse(`version ${JSON.stringify(value)} is not 1`);
        out[f.key] = 1;
        break;
      case "path":
        out[f.key] = value;
        break;
      case "timeout": {
        const n = decimal(name, value);
        if (n > BigInt(MAX_DEVICE_TIMEOUT_MS)) refuse(`device-timeout-ms ${value} is beyond 600,000`);
        out[f.key] = Number(n);
        break;
      }
      case "positive": {
        const n = decimal(name, value);
        if (n === 0n) refuse(`${name} must be positive`);
        out[f.key] = n;
        break;
      }
      case "mappings": {
        const n = decimal(name, value);
        if (n === 0n || n > BigInt(MAX_MAPPINGS)) refuse(`mapping-count ${value} is not between 1 and 4,096`);
        out[f.key] = Number(n);
        break;
      }
      case "overlay":
        if (value !== "trusted-lowers" && value !== "untrusted-lowers") {
          refuse(`overlay-mode ${JSON.stringify(value)} is neither trusted-lowers nor untrusted-lowers`);
        }
        out[f.key] = value;
        break;
      case "journal":
        if (value !== "allowed" && value !== "forbidden") {
          refuse(`scratch-journal ${JSON.stringify(value)} is neither allowed nor forbidden`);
        }
        out[f.key] = value;
        break;
    }
  }
  for (const f of ROOT_CONFIG_FIELDS) {
    if (f.required && !seen.has(f.name)) refuse(`required field ${f.name} is missing`);
  }
  const config = out as unknown as RootConfig;
  checkRootConfig(config);
  return config;
}

/** Encodes a RootConfig in the table's order; refuses one that the guest would refuse. */
export function encodeRootConfig(c: RootConfig): Uint8Array {
  checkRootConfig(c);
  let text = "";
  for (const f of ROOT_CONFIG_FIELDS) {
    const v = c[f.key];
    if (v !== undefined) text += `${f.name}=${String(v)}\n`;
  }
  const body = encodeUtf8(text);
  if (body.length > MAX_TEXT_BODY) refuse(`longer than ${MAX_TEXT_BODY} bytes`);
  return body;
}
