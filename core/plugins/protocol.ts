/**
 * The driver plugin contract's data: the manifest bcd reads before it starts a plugin, the frames both sides write
 * over the plugin's stdio, and their bounds. See `core/plugins/README.md` for the contract as a plugin author reads
 * it. Everything here is pure: decoders check sizes before they parse and refuse anything the contract does not name.
 *
 * @module
 */

/** The protocol versions this bcd speaks; a plugin must pick one in its hello. */
export const PLUGIN_PROTOCOLS: readonly number[] = [1];

/** The longest frame (one line of JSON, its newline included) either side may write. */
export const MAX_FRAME = 1024 * 1024;

/** The longest `input` bcd hands a plugin and the longest `output` it takes back. */
export const MAX_INPUT = 256 * 1024;
export const MAX_OUTPUT = 512 * 1024;

/** The largest manifest file bcd reads. */
export const MAX_MANIFEST = 64 * 1024;

/** The most plugins one directory may hold and operations one plugin may serve. */
export const MAX_PLUGINS = 64;
export const MAX_OPERATIONS = 64;

/** The bounds of a manifest's timeouts, in ms. */
export const MIN_TIMEOUT_MS = 50;
export const MAX_TIMEOUT_MS = 6 * 60 * 60 * 1000;

/** The operation a plugin lists to be an instance runtime too (`list`, `apply`, `remove`). */
export const RUNTIME_OPERATION = "runtime";

const NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;
const OPERATION = /^[a-z][A-Za-z0-9._-]{0,62}$/;
const VERSION = /^[0-9A-Za-z.+-]{1,64}$/;
const EXECUTABLE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** How long each phase may take. */
export interface PluginTimeouts {
  /** From the start of the process to its hello. */
  readonly handshakeMs: number;
  /** One invoke, from the request to its answer; a plugin that overruns it is killed. */
  readonly invokeMs: number;
  /** After a cancel, how long the plugin has to answer before it is killed. */
  readonly cancelGraceMs: number;
}

/** The defaults of {@link PluginTimeouts}. */
export const DEFAULT_TIMEOUTS: PluginTimeouts = { handshakeMs: 10_000, invokeMs: 10 * 60_000, cancelGraceMs: 5_000 };

/** A plugin's `manifest.json`. */
export interface PluginManifest {
  readonly name: string;
  readonly version: string;
  /** The protocol version the plugin speaks. */
  readonly protocol: number;
  /** The executable's file name, in the plugin's own directory. */
  readonly executable: string;
  /** The operations it serves (`runtime` among them for a runtime plugin). */
  readonly operations: readonly string[];
  readonly timeouts: PluginTimeouts;
}

/** Why a plugin call failed: each is the `driver.invoke` command's failure reason. */
export type PluginFailure =
  | "unknown-plugin"
  | "unknown-operation"
  | "plugin-protocol"
  | "plugin-timeout"
  | "plugin-crashed"
  | "plugin-failed"
  | "cancelled";

/** A plugin call failed for {@link reason}; the message names the plugin and what happened. */
export class PluginError extends Error {
  override name = "PluginError";
  constructor(readonly reason: PluginFailure, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** Whether `s` is a plugin name (lower case, digits, `.`, `_`, `-`; the directory's name). */
export function isPluginName(s: unknown): s is string {
  return typeof s === "string" && NAME.test(s);
}

/** Whether `s` is an operation name. */
export function isOperationName(s: unknown): s is string {
  return typeof s === "string" && OPERATION.test(s);
}

function _obj(v: unknown, what: string): Record<string, unknown> {
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new TypeError(`${what} is not an object`);
  return v as Record<string, unknown>;
}

function _only(o: Record<string, unknown>, allowed: readonly string[], what: string): void {
  for (const k of Object.keys(o)) if (!allowed.includes(k)) throw new TypeError(`${what} has an unknown field ${k}`);
}

function _timeout(v: unknown, name: string, dflt: number): number {
  if (v === undefined) return dflt;
  if (typeof v !== "number" || !Number.isInteger(v) || v < MIN_TIMEOUT_MS || v > MAX_TIMEOUT_MS) {
    throw new TypeError(`timeouts.${name} must be an integer from ${MIN_TIMEOUT_MS} to ${MAX_TIMEOUT_MS} ms`);
  }
  return v;
}

/**
 * Parses a manifest's text for the plugin directory `dirName`; throws a `TypeError` naming the first problem. The
 * name must be the directory's, so one plugin cannot answer for another.
 */
export function parseManifest(text: string, dirName: string): PluginManifest {
  if (text.length > MAX_MANIFEST) throw new TypeError(`the manifest is over ${MAX_MANIFEST} bytes`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    if (!(e instanceof SyntaxError)) throw e;
    throw new TypeError(`the manifest is not JSON (${e.message})`, { cause: e });
  }
  const o = _obj(raw, "the manifest");
  _only(o, ["name", "version", "protocol", "executable", "operations", "timeouts"], "the manifest");
  if (!isPluginName(o.name)) throw new TypeError(`name ${JSON.stringify(o.name)} is not a plugin name`);
  if (o.name !== dirName) throw new TypeError(`name ${o.name} is not its directory's (${dirName})`);
  if (typeof o.version !== "string" || !VERSION.test(o.version)) throw new TypeError("version is not a version");
  if (typeof o.protocol !== "number" || !Number.isInteger(o.protocol)) {
    throw new TypeError("protocol is not an integer");
  }
  if (typeof o.executable !== "string" || !EXECUTABLE.test(o.executable)) {
    throw new TypeError("executable is not a file name in the plugin's directory");
  }
  if (!Array.isArray(o.operations) || o.operations.length === 0 || o.operations.length > MAX_OPERATIONS) {
    throw new TypeError(`operations must list 1 to ${MAX_OPERATIONS} operations`);
  }
  for (const op of o.operations) {
    if (!isOperationName(op)) throw new TypeError(`operation ${JSON.stringify(op)} is not an operation name`);
  }
  if (new Set(o.operations).size !== o.operations.length) throw new TypeError("operations lists one twice");
  const t = o.timeouts === undefined ? {} : _obj(o.timeouts, "timeouts");
  _only(t, ["handshakeMs", "invokeMs", "cancelGraceMs"], "timeouts");
  return {
    name: o.name,
    version: o.version,
    protocol: o.protocol,
    executable: o.executable,
    operations: [...o.operations as string[]],
    timeouts: {
      handshakeMs: _timeout(t.handshakeMs, "handshakeMs", DEFAULT_TIMEOUTS.handshakeMs),
      invokeMs: _timeout(t.invokeMs, "invokeMs", DEFAULT_TIMEOUTS.invokeMs),
      cancelGraceMs: _timeout(t.cancelGraceMs, "cancelGraceMs", DEFAULT_TIMEOUTS.cancelGraceMs),
    },
  };
}

/** bcd's frames. */
export type HostFrame =
  | { readonly t: "hello"; readonly protocols: readonly number[]; readonly bcd: string }
  | { readonly t: "invoke"; readonly id: number; readonly op: string; readonly input: string }
  | { readonly t: "cancel"; readonly id: number };

/** The plugin's frames. */
export type PluginFrame =
  | { readonly t: "hello"; readonly protocol: number; readonly name: string; readonly version: string }
  | { readonly t: "result"; readonly id: number; readonly output: string }
  | { readonly t: "error"; readonly id: number; readonly code: string; readonly message: string };

/** One frame as a line. */
export function encodeFrame(f: HostFrame): string {
  const line = JSON.stringify(f) + "\n";
  if (line.length > MAX_FRAME) throw new RangeError(`a ${f.t} frame is over ${MAX_FRAME} bytes`);
  return line;
}

const _CODE = /^[a-z][a-z0-9-]{0,62}$/;

/** One frame line as a JSON object, its size bounded first. */
function _frameObject(line: string): Record<string, unknown> {
  if (line.length >= MAX_FRAME) throw new TypeError(`a frame is over ${MAX_FRAME} bytes`);
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch (e) {
    if (!(e instanceof SyntaxError)) throw e;
    throw new TypeError(`a frame is not JSON: ${line.slice(0, 80)}`, { cause: e });
  }
  return _obj(raw, "a frame");
}

/** Decodes one line the plugin wrote (without its newline); throws a `TypeError` naming the problem. */
export function decodePluginFrame(line: string): PluginFrame {
  const o = _frameObject(line);
  const id = o.id;
  const okId = typeof id === "number" && Number.isSafeInteger(id) && id > 0;
  switch (o.t) {
    case "hello":
      _only(o, ["t", "protocol", "name", "version"], "hello");
      if (typeof o.protocol !== "number" || !Number.isInteger(o.protocol)) throw new TypeError("hello has no protocol");
      if (!isPluginName(o.name)) throw new TypeError("hello has no plugin name");
      if (typeof o.version !== "string" || !VERSION.test(o.version)) throw new TypeError("hello has no version");
      return { t: "hello", protocol: o.protocol, name: o.name, version: o.version };
    case "result":
      _only(o, ["t", "id", "output"], "result");
      if (!okId) throw new TypeError("result has no request id");
      if (typeof o.output !== "string") throw new TypeError("result has no output string");
      if (o.output.length > MAX_OUTPUT) throw new TypeError(`result output is over ${MAX_OUTPUT} bytes`);
      return { t: "result", id: id as number, output: o.output };
    case "error":
      _only(o, ["t", "id", "code", "message"], "error");
      if (!okId) throw new TypeError("error has no request id");
      if (typeof o.code !== "string" || !_CODE.test(o.code)) throw new TypeError("error has no code");
      if (typeof o.message !== "string") throw new TypeError("error has no message");
      return { t: "error", id: id as number, code: o.code, message: o.message.slice(0, 2048) };
    default:
      throw new TypeError(`a frame of unknown type ${JSON.stringify(o.t)}`);
  }
}

/** Decodes one line bcd's side wrote (without its newline), as the helper checks it before relaying. */
export function decodeHostFrame(line: string): HostFrame {
  const o = _frameObject(line);
  const okId = typeof o.id === "number" && Number.isSafeInteger(o.id) && o.id > 0;
  switch (o.t) {
    case "hello":
      _only(o, ["t", "protocols", "bcd"], "hello");
      if (!Array.isArray(o.protocols) || !o.protocols.every((p) => Number.isInteger(p)) || o.protocols.length > 16) {
        throw new TypeError("hello has no protocols");
      }
      if (typeof o.bcd !== "string" || !VERSION.test(o.bcd)) throw new TypeError("hello has no bcd version");
      return { t: "hello", protocols: [...o.protocols as number[]], bcd: o.bcd };
    case "invoke":
      _only(o, ["t", "id", "op", "input"], "invoke");
      if (!okId) throw new TypeError("invoke has no request id");
      if (!isOperationName(o.op)) throw new TypeError("invoke has no operation");
      if (typeof o.input !== "string" || o.input.length > MAX_INPUT) throw new TypeError("invoke has no input");
      return { t: "invoke", id: o.id as number, op: o.op, input: o.input };
    case "cancel":
      _only(o, ["t", "id"], "cancel");
      if (!okId) throw new TypeError("cancel has no request id");
      return { t: "cancel", id: o.id as number };
    default:
      throw new TypeError(`a frame of unknown type ${JSON.stringify(o.t)}`);
  }
}

/**
 * How a plugin process ended, as the host reads it: its exit status, the tail of its stderr, and, when the side that
 * ran it killed it for a reason (a frame over the bound, a bad frame), that reason. Over the helper's relay it is the
 * last line (`{"t":"exit",…}`), a type no plugin frame may have.
 */
export interface PluginExit {
  readonly code: number | null;
  readonly signal: string | null;
  readonly stderr: string;
  readonly failure?: { readonly reason: PluginFailure; readonly message: string };
}

const _FAILURES: readonly PluginFailure[] = [
  "unknown-plugin",
  "unknown-operation",
  "plugin-protocol",
  "plugin-timeout",
  "plugin-crashed",
  "plugin-failed",
  "cancelled",
];

/** The relay's last line for `e`. */
export function encodeExit(e: PluginExit): string {
  return JSON.stringify({ t: "exit", ...e, stderr: e.stderr.slice(-4096) }) + "\n";
}

/** Decodes the relay's exit line, or `undefined` when `line` is not one. */
export function decodeExit(line: string): PluginExit | undefined {
  if (!line.startsWith('{"t":"exit"')) return undefined;
  const o = _obj(JSON.parse(line), "exit");
  _only(o, ["t", "code", "signal", "stderr", "failure"], "exit");
  const code = typeof o.code === "number" && Number.isInteger(o.code) ? o.code : null;
  const signal = typeof o.signal === "string" ? o.signal.slice(0, 32) : null;
  const stderr = typeof o.stderr === "string" ? o.stderr.slice(-4096) : "";
  const f = o.failure === undefined ? undefined : _obj(o.failure, "exit.failure");
  if (f && (!_FAILURES.includes(f.reason as PluginFailure) || typeof f.message !== "string")) {
    throw new TypeError("exit has a bad failure");
  }
  return {
    code,
    signal,
    stderr,
    ...(f ? { failure: { reason: f.reason as PluginFailure, message: (f.message as string).slice(0, 2048) } } : {}),
  };
}
