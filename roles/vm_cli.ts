/**
 * `bcd-vm`: the guest agent's host program (seed 002 §Commands) — `stage`, `launch`, `reattach`, `stop`, `probe` —
 * as a host tool of its own rather than a `bcd-node` subcommand: it is an operator's (and the VM tests') program
 * that takes image and store paths on its command line and runs the hypervisor with the checked images' descriptors,
 * while `bcd-node` runs scoped and never names a path to its root helper. It reads `/proc` for the VMM's verified
 * identity, which Deno grants only to `--allow-all`.
 *
 * Output: `KEY=VALUE` lines (values escape `\`, newline, carriage return). Exit: 0 done, 1 failed (diagnostic on
 * standard error), 2 usage, 3 VM mismatched, 4 a stage of the root failed and the VM ended with its status, 5 the step
 * hook ended a launch. Without arguments it reports the contract it was built against.
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { OverlayMode, ScratchJournal } from "../core/framing/mod.ts";
import { AGENT_VERSION, BUILD, PROTOCOLS } from "../core/version.ts";
import { ARTIFACTS_VAR, ArtifactsInvalid, loadArtifacts } from "../runtimes/vm/artifacts.ts";
import { probe, reattach, stage, stop } from "../runtimes/vm/control.ts";
import { EXIT_FAILED, EXIT_USAGE, formatKeyValues, type HostResult } from "../runtimes/vm/key_value.ts";
import { launch, type LayeredOptions } from "../runtimes/vm/launch.ts";
import { BindingRefused, type DistroFormat } from "../runtimes/vm/staged.ts";
import { StepHook, StepHookUsage } from "../runtimes/vm/step_hook.ts";
import { QemuVmm, type Vmm } from "../runtimes/vm/vmm.ts";

/** A command line that this program refuses (exit 2). */
export class VmUsage extends Error {
  override name = "VmUsage";
}

/** What the caller may inject (tests: the fake VMM). */
export interface VmCliDeps {
  readonly vmm?: Vmm;
  /** The default of `--timeout-ms`. */
  readonly timeoutMs?: number;
}

/** One line per command, for `help` and `COMMAND --help`. */
const SUMMARIES: Readonly<Record<string, string>> = {
  stage: "verify and bind a layered root's images into the sandbox store STORE",
  launch: "check the staged bindings, boot the guest agent in a VM, attach, configure its root and commit",
  reattach: "find the sandbox's VM through its verified process identity and attach a new session",
  stop: "reattach, stop the VM gracefully (terminate it when the guest does not confirm) and check its outcome",
  probe: "reattach and run each PROBE in the VM's layered root",
  version: "print the program, build and protocol versions as JSON",
  help: "list the commands",
};

const USAGE = `usage: bcd-vm COMMAND
  version | help
  stage STORE --distro FORMAT:PATH --distro-identity UUID [--upper scratch:PATH]
  launch STORE --guest-agent PATH [--hypervisor qemu|qemu-tcg|qemu-kvm] [--guest-build BUILD]
         [--distro FORMAT:PATH --distro-identity UUID --upper (scratch:PATH|ram) [--runtime-dir DIR]
          [--overlay-mode trusted-lowers|untrusted-lowers] [--scratch-journal allowed|forbidden]
          [--first-partition-bound BYTES]]
  reattach STORE [--guest-build BUILD]
  stop STORE [--guest-build BUILD]
  probe STORE PROBE... [--guest-build BUILD]
env: ${ARTIFACTS_VAR} (the kernel, base initramfs and their SHA256SUMS), RUNTIME_ADAPTER_STEP_HOOK (launch)`;

function _distro(v: unknown): { format: DistroFormat; path: string } {
  const s = String(v ?? "");
  const i = s.indexOf(":");
  const format = s.slice(0, i);
  if (i < 0 || (format !== "erofs" && format !== "gpt") || !s.slice(i + 1).startsWith("/")) {
    throw new VmUsage(`--distro ${JSON.stringify(s)} is not erofs:/PATH or gpt:/PATH`);
  }
  return { format, path: s.slice(i + 1) };
}

function _oneOf<T extends string>(v: unknown, allowed: readonly T[], flag: string): T | undefined {
  if (v === undefined) return undefined;
  if (!(allowed as readonly unknown[]).includes(v)) {
    throw new VmUsage(`${flag} ${JSON.stringify(v)} is not ${allowed.join(" or ")}`);
  }
  return v as T;
}

function _vmm(name: unknown): Vmm {
  switch (name ?? Deno.env.get("BCD_VM_HYPERVISOR") ?? "qemu") {
    case "qemu":
      return new QemuVmm();
    case "qemu-tcg":
      return new QemuVmm({ accel: "tcg" });
    case "qemu-kvm":
      return new QemuVmm({ accel: "kvm" });
    default:
      throw new VmUsage(`--hypervisor ${JSON.stringify(name)} is not qemu, qemu-tcg or qemu-kvm`);
  }
}

function _layered(v: Record<string, unknown>): LayeredOptions | undefined {
  const given = [
    "distro",
    "distro-identity",
    "upper",
    "runtime-dir",
    "overlay-mode",
    "scratch-journal",
    "first-partition-bound",
  ].filter((k) => v[k] !== undefined);
  if (given.length === 0) return undefined;
  for (const k of ["distro", "distro-identity", "upper"]) {
    if (v[k] === undefined) throw new VmUsage(`a layered launch needs --${k}`);
  }
  const distro = _distro(v.distro);
  const up = String(v.upper);
  let upper: LayeredOptions["upper"];
  if (up === "ram") upper = "ram";
  else if (up.startsWith("scratch:/")) upper = { scratch: up.slice("scratch:".length) };
  else throw new VmUsage(`--upper ${JSON.stringify(up)} is not scratch:/PATH or ram`);
  if (upper === "ram" && v["scratch-journal"] !== undefined) {
    throw new VmUsage("--scratch-journal takes a scratch upper");
  }
  if (distro.format !== "gpt" && v["first-partition-bound"] !== undefined) {
    throw new VmUsage("--first-partition-bound takes a gpt image");
  }
  const bound = v["first-partition-bound"];
  if (bound !== undefined && !/^[1-9]\d*$/.test(String(bound))) {
    throw new VmUsage(`--first-partition-bound ${bound} is not a positive number`);
  }
  const overlayMode = _oneOf<OverlayMode>(v["overlay-mode"], ["trusted-lowers", "untrusted-lowers"], "--overlay-mode");
  const scratchJournal = _oneOf<ScratchJournal>(v["scratch-journal"], ["allowed", "forbidden"], "--scratch-journal");
  return {
    distro,
    identity: String(v["distro-identity"]),
    upper,
    ...(v["runtime-dir"] !== undefined ? { runtimeDir: String(v["runtime-dir"]) } : {}),
    ...(overlayMode ? { overlayMode } : {}),
    ...(scratchJournal ? { scratchJournal } : {}),
    ...(bound !== undefined ? { firstPartitionBound: BigInt(String(bound)) } : {}),
  };
}

/** What `version` prints: the program (as `role`, like every executable's), its build and protocols; no kinds. */
export function versionInfo(): Record<string, unknown> {
  return { role: "vm", program: "bcd-vm", version: AGENT_VERSION, build: BUILD, protocols: PROTOCOLS, kinds: [] };
}

/** Runs one command line; returns its result (the caller prints it), or `help` for `COMMAND --help`. */
export async function runVm(
  argv: readonly string[],
  deps: VmCliDeps = {},
): Promise<HostResult & { help?: string }> {
  const [cmd, ...rest] = argv;
  const str = { type: "string" } as const;
  const common = { "guest-build": str, "timeout-ms": str };
  const spec: Record<string, Record<string, typeof str>> = {
    stage: { distro: str, "distro-identity": str, upper: str },
    launch: {
      ...common,
      "guest-agent": str,
      hypervisor: str,
      distro: str,
      "distro-identity": str,
      upper: str,
      "runtime-dir": str,
      "overlay-mode": str,
      "scratch-journal": str,
      "first-partition-bound": str,
      memory: str,
    },
    reattach: common,
    stop: common,
    probe: common,
  };
  const options = cmd === undefined ? undefined : spec[cmd];
  if (options === undefined) throw new VmUsage(`unknown command ${JSON.stringify(cmd)}\n${USAGE}`);
  if (rest.includes("--help") || rest.includes("-h")) {
    return { code: 0, out: [], help: `bcd-vm ${cmd}: ${SUMMARIES[cmd!]}` };
  }
  let parsed;
  try {
    parsed = parseArgs({ args: [...rest], options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new VmUsage(`${(e as Error).message}\n${USAGE}`);
  }
  const v = parsed.values as Record<string, unknown>;
  const [storeDir, ...more] = parsed.positionals;
  if (storeDir === undefined || !storeDir.startsWith("/")) throw new VmUsage(`${cmd} needs an absolute STORE`);
  if (cmd !== "probe" && more.length > 0) throw new VmUsage(`${cmd} takes one STORE, not ${parsed.positionals.length}`);
  if (cmd === "probe" && more.length === 0) throw new VmUsage("probe needs at least one PROBE");
  const timeoutMs = v["timeout-ms"] !== undefined ? Number(v["timeout-ms"]) : deps.timeoutMs ?? 300_000;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    throw new VmUsage(`--timeout-ms ${v["timeout-ms"]} is not a positive integer`);
  }

  if (cmd === "stage") {
    if (v.distro === undefined || v["distro-identity"] === undefined) {
      throw new VmUsage("stage needs --distro and --distro-identity");
    }
    const up = v.upper === undefined ? null : String(v.upper);
    if (up !== null && !up.startsWith("scratch:/")) {
      throw new VmUsage(`--upper ${JSON.stringify(up)} is not scratch:/PATH`);
    }
    try {
      return await stage(
        storeDir,
        _distro(v.distro),
        String(v["distro-identity"]),
        up?.slice("scratch:".length) ?? null,
      );
    } catch (e) {
      if (e instanceof BindingRefused) return { code: EXIT_FAILED, out: [], problem: e.message };
      throw e;
    }
  }
  const dir = Deno.env.get(ARTIFACTS_VAR);
  if (dir === undefined) {
    return { code: EXIT_FAILED, out: [], problem: `${ARTIFACTS_VAR} names no artifacts directory` };
  }
  let artifacts;
  try {
    artifacts = await loadArtifacts(dir, String(v["guest-build"] ?? AGENT_VERSION));
  } catch (e) {
    if (e instanceof ArtifactsInvalid || e instanceof RangeError) {
      return { code: EXIT_FAILED, out: [], problem: e.message };
    }
    throw e;
  }
  const attach = { store: storeDir, artifacts, timeoutMs };
  switch (cmd) {
    case "launch": {
      if (v["guest-agent"] === undefined) throw new VmUsage("launch needs --guest-agent PATH");
      let hook;
      try {
        hook = StepHook.fromEnv();
      } catch (e) {
        if (e instanceof StepHookUsage) throw new VmUsage(e.message);
        throw e;
      }
      const layered = _layered(v);
      const memory = v.memory === undefined ? undefined : Number(v.memory);
      return await launch({
        store: storeDir,
        guestAgent: String(v["guest-agent"]),
        // PID 1 of the VM: it mounts the layered root and writes cgroupfs and /proc/sysrq-trigger (guest_initramfs.ts).
        guestFlags: ["--quiet", "--no-prompt", "--allow-all"],
        artifacts,
        vmm: deps.vmm ?? _vmm(v.hypervisor),
        hook,
        ...(layered ? { layered } : {}),
        timeoutMs,
        ...(memory ? { memoryMiB: memory } : {}),
      });
    }
    case "reattach":
      return await reattach(attach);
    case "stop":
      return await stop(attach);
    default:
      return await probe(attach, more);
  }
}

/** The program: prints the result and returns the exit status. */
export async function vmMain(argv: readonly string[], deps: VmCliDeps = {}): Promise<number> {
  const enc = new TextEncoder();
  if (argv.length === 0 || argv[0] === "version") {
    if (argv.length > 1) {
      Deno.stderr.writeSync(enc.encode("bcd-vm: version takes no arguments\n"));
      return EXIT_USAGE;
    }
    // Without arguments it reports the contract it was built against (seed 002 §Commands), as `version` does.
    Deno.stdout.writeSync(enc.encode(JSON.stringify(versionInfo()) + "\n"));
    return 0;
  }
  if (argv[0] === "help" || argv[0] === "--help" || argv[0] === "-h") {
    const lines = Object.entries(SUMMARIES).map(([c, s]) => `  ${c.padEnd(10)} ${s}`);
    Deno.stdout.writeSync(enc.encode(`${USAGE}\n\ncommands:\n${lines.join("\n")}\n`));
    return 0;
  }
  let r: HostResult & { help?: string };
  try {
    r = await runVm(argv, deps);
  } catch (e) {
    if (e instanceof VmUsage) {
      Deno.stderr.writeSync(enc.encode(`bcd-vm: ${e.message}\n`));
      return EXIT_USAGE;
    }
    Deno.stderr.writeSync(enc.encode(`bcd-vm: ${e instanceof Error ? e.message : String(e)}\n`));
    return EXIT_FAILED;
  }
  if (r.help !== undefined) {
    Deno.stdout.writeSync(enc.encode(r.help + "\n"));
    return 0;
  }
  Deno.stdout.writeSync(enc.encode(formatKeyValues(r.out)));
  if (r.problem !== undefined) Deno.stderr.writeSync(enc.encode(`bcd-vm: ${r.problem}\n`));
  return r.code;
}
