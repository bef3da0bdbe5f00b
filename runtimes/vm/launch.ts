/**
 * `launch` (seed 002 §Layered roots, §The checked handoff, §Commands): under the sandbox's lock, checks that no VM of
 * the sandbox runs; for a layered root, takes the staged bindings of its images by their paths, opens each image
 * once and checks the opened file's metadata against its binding, and claims the scratch image — a check that fails
 * leaves nothing in the store. Then (step `checked`) it writes the VM's initramfs and its launch record, journals and
 * spawns the VMM with the checked files as its only extra descriptors (step `spawned`), attaches, sends the root
 * configuration as it is (the guest checks it), releases the checked files once the guest is ready (step `ready`),
 * exchanges a Ping and the longest Echo, and commits (step `commit`): the runtime record names the VMM and the
 * journal goes. A guest that reports a failed stage is waited for, and the launch is abandoned; a launch that fails
 * otherwise ends its VMM.
 *
 * @module
 */
import fs from "node:fs";
import {
  decodeReady,
  decodeRootFailure,
  defaultRootConfig,
  Kind,
  kindSpec,
  type OverlayMode,
  ROOT_CONFIG_FIELDS,
  type RootConfig,
  type ScratchJournal,
  stageSpec,
} from "../../core/framing/mod.ts";
import { formatChannelKey, newChannelKey } from "../../core/turns/auth.ts";
import { FramingClient } from "../guest/framing_client.ts";
import type { Artifacts } from "./artifacts.ts";
import { EXIT_FAILED, EXIT_OK, EXIT_ROOT_FAILED, type HostResult, type KeyValue } from "./key_value.ts";
import { writeGuestInitramfs } from "./guest_initramfs.ts";
import { identify, isAlive, type ProcessIdentity } from "./process_identity.ts";
import { BindingRefused, checkBinding, decodeStaged, type DistroFormat, STAGED_FILE } from "./staged.ts";
import type { StepHook } from "./step_hook.ts";
import {
  CAPABILITY_FILE,
  claimScratch,
  CONTROL_SOCKET,
  INITRAMFS_FILE,
  LAUNCH_JOURNAL,
  LAUNCH_RECORD,
  refuseOthersClaim,
  releaseScratch,
  RUNTIME_RECORD,
  SandboxStore,
  selfIdentity,
  VMM_LOG,
} from "./store.ts";
import { spawnVmm, type Vmm, type VmmDisk } from "./vmm.ts";
import { connectControl, readOutcome, waitExit } from "./vm_session.ts";

/** The boot tokens' addresses of the image and the scratch (the seed's examples). */
export const DISTRO_ADDRESS = "0xd0003000";
export const SCRATCH_ADDRESS = "0xd0006000";
/** The kernel command line's tokens before the launch's own. */
export const BASE_CMDLINE = "console=ttyS0 panic=-1 loglevel=5";

/** A layered root's options. */
export interface LayeredOptions {
  readonly distro: { readonly format: DistroFormat; readonly path: string };
  readonly identity: string;
  readonly upper: { readonly scratch: string } | "ram";
  readonly runtimeDir?: string;
  readonly overlayMode?: OverlayMode;
  readonly scratchJournal?: ScratchJournal;
  readonly firstPartitionBound?: bigint;
}

/** What a launch needs. */
export interface LaunchOptions {
  readonly store: string;
  /** The bundled guest agent (`deno bundle roles/guest.ts`). */
  readonly guestAgent: string;
  /** The guest role's Deno flags, for the initramfs's launcher. */
  readonly guestFlags: readonly string[];
  readonly artifacts: Artifacts;
  readonly vmm: Vmm;
  readonly hook: StepHook;
  readonly layered?: LayeredOptions;
  /** How long the guest may take to attach and answer each request (boots under TCG are slow). */
  readonly timeoutMs: number;
  readonly memoryMiB?: number;
}

/** The root configuration's text as the launch sends it, unchecked: the guest checks it. */
export function rootConfigText(c: RootConfig): string {
  let text = "";
  for (const f of ROOT_CONFIG_FIELDS) {
    const v = c[f.key];
    if (v !== undefined) text += `${f.name}=${String(v)}\n`;
  }
  return text;
}

/** The root configuration of a layered launch: the defaults, the caller's runtime dir as is, sizes in sectors. */
export function layeredRootConfig(l: LayeredOptions, distroSize: bigint, scratchSize: bigint | null): RootConfig {
  const c: Record<string, unknown> = { ...defaultRootConfig() };
  if (l.runtimeDir !== undefined) c.runtime = l.runtimeDir;
  if (distroSize % 512n === 0n) c.distroSectors = distroSize / 512n;
  if (scratchSize !== null && scratchSize % 512n === 0n) c.scratchSectors = scratchSize / 512n;
  if (l.overlayMode !== undefined) c.overlayMode = l.overlayMode;
  if (l.scratchJournal !== undefined) c.scratchJournal = l.scratchJournal;
  if (l.firstPartitionBound !== undefined) c.firstPartitionBound = l.firstPartitionBound;
  return c as unknown as RootConfig;
}

/** The kernel command line of a launch. */
export function kernelCommandLine(l: LayeredOptions | undefined): string {
  if (l === undefined) return BASE_CMDLINE;
  const tokens = [BASE_CMDLINE, "nvx_sandbox=1", `nvx_layer=distro,${DISTRO_ADDRESS},${l.distro.format}:${l.identity}`];
  if (l.upper !== "ram") tokens.push(`nvx_scratch=${SCRATCH_ADDRESS},ext4`);
  return tokens.join(" ");
}

interface Checked {
  readonly disks: VmmDisk[];
  readonly fds: number[];
  readonly bindings: { distro: unknown; scratch: unknown } | null;
  readonly sizes: { distro: bigint; scratch: bigint | null };
  readonly scratch: string | null;
}

/** Opens and checks the staged images (`LayeredLaunch::prepare`); on failure closes what it opened. */
async function prepare(store: SandboxStore, l: LayeredOptions): Promise<Checked> {
  const text = await store.read(STAGED_FILE);
  if (text === null) throw new BindingRefused(`the store stages no image (no ${STAGED_FILE} in ${store.dir})`);
  const staged = decodeStaged(text);
  if (staged.distro.path !== l.distro.path) {
    throw new BindingRefused(`the store stages no image at ${l.distro.path} (it stages ${staged.distro.path})`);
  }
  const b = staged.distro.binding;
  if (b.format !== l.distro.format) {
    throw new BindingRefused(`the image was staged as ${b.format}, not ${l.distro.format}`);
  }
  if (b.identity.toLowerCase() !== l.identity.toLowerCase()) {
    throw new BindingRefused(`the image was staged with identity ${b.identity}, not ${l.identity}`);
  }
  const scratchPath = l.upper === "ram" ? null : l.upper.scratch;
  if (scratchPath !== null && staged.scratch?.path !== scratchPath) {
    throw new BindingRefused(`the store stages no scratch image at ${scratchPath}`);
  }
  const fds: number[] = [];
  try {
    const open = (p: string, flags: string) => {
      try {
        const fd = fs.openSync(p, flags);
        fds.push(fd);
        return fd;
      } catch (e) {
        throw new BindingRefused(`cannot open ${p}: ${(e as Error).message}`, { cause: e });
      }
    };
    const dfd = open(l.distro.path, "r");
    checkBinding(dfd, l.distro.path, b);
    const disks: VmmDisk[] = [{ fd: dfd, readOnly: true, address: DISTRO_ADDRESS }];
    if (scratchPath !== null) {
      const sfd = open(scratchPath, "r+");
      // Another sandbox's running VM first: it writes to the image, so the binding check would refuse it as changed.
      await refuseOthersClaim(scratchPath, store.dir);
      checkBinding(sfd, scratchPath, staged.scratch!.binding);
      await claimScratch(scratchPath, store.dir, await selfIdentity());
      disks.push({ fd: sfd, readOnly: false, address: SCRATCH_ADDRESS });
    }
    return {
      disks,
      fds,
      bindings: { distro: b, scratch: staged.scratch?.binding ?? null },
      sizes: { distro: BigInt(b.size), scratch: staged.scratch ? BigInt(staged.scratch.binding.size) : null },
      scratch: scratchPath,
    };
  } catch (e) {
    for (const fd of fds) fs.closeSync(fd);
    throw e;
  }
}

/** Runs a launch. */
export async function launch(o: LaunchOptions): Promise<HostResult> {
  const store = new SandboxStore(o.store);
  await store.lock();
  let checked: Checked | null = null;
  let vmm: ProcessIdentity | null = null;
  let client: FramingClient | null = null;
  const out: KeyValue[] = [];
  const closeChecked = () => {
    for (const fd of checked?.fds ?? []) fs.closeSync(fd);
    if (checked) checked = { ...checked, fds: [] };
  };
  try {
    const running = await store.runningVmm();
    if (running !== null) {
      return { code: EXIT_FAILED, out, problem: `a VM of sandbox ${o.store} runs (pid ${running.pid})` };
    }
    // What an earlier launch or VM left (its VMM is gone): the new launch replaces it.
    for (const f of [RUNTIME_RECORD, LAUNCH_JOURNAL]) await store.remove(f);
    if (o.layered) {
      try {
        checked = await prepare(store, o.layered);
      } catch (e) {
        return { code: EXIT_FAILED, out, problem: `launch refused before spawn: ${(e as Error).message}` };
      }
    }
    await o.hook.at("checked");
    const agent = await Deno.readFile(o.guestAgent);
    // The launch capability, which is also the VM's channel key: kept in the (0700) store for reattach, and in the
    // VM's initramfs for the guest's check.
    const capability = newChannelKey();
    await store.write(CAPABILITY_FILE, formatChannelKey(capability) + "\n");
    await writeGuestInitramfs(o.artifacts.initramfs, store.path(INITRAMFS_FILE), agent, o.guestFlags, capability);
    const cmdline = kernelCommandLine(o.layered);
    const config = o.layered && checked
      ? layeredRootConfig(o.layered, checked.sizes.distro, checked.sizes.scratch)
      : null;
    await store.write(
      LAUNCH_RECORD,
      JSON.stringify({
        format: 1,
        mode: o.layered ? "layered" : "blockless",
        kernelCommandLine: cmdline,
        plan: o.layered
          ? {
            vmm: o.vmm.name,
            kernel: o.artifacts.kernel,
            identity: o.artifacts.identity,
            distro: { path: o.layered.distro.path, format: o.layered.distro.format, address: DISTRO_ADDRESS },
            scratch: checked?.scratch ? { path: checked.scratch, address: SCRATCH_ADDRESS } : null,
          }
          : null,
        bindings: checked?.bindings ?? null,
        rootConfiguration: config ? rootConfigText(config) : null,
      }) + "\n",
    );
    await store.write(LAUNCH_JOURNAL, JSON.stringify({ format: 1, vmm: null }));
    await store.remove(CONTROL_SOCKET);
    const pid = spawnVmm(o.vmm, {
      kernel: o.artifacts.kernel,
      initramfs: store.path(INITRAMFS_FILE),
      cmdline,
      disks: checked?.disks ?? [],
      controlSocket: store.path(CONTROL_SOCKET),
      logPath: store.path(VMM_LOG),
      ...(o.memoryMiB ? { memoryMiB: o.memoryMiB } : {}),
    });
    vmm = await identify(pid);
    if (vmm === null) throw new Error(`the VMM (pid ${pid}) ended at once; see ${store.path(VMM_LOG)}`);
    await store.write(LAUNCH_JOURNAL, JSON.stringify({ format: 1, vmm }));
    if (checked?.scratch) await claimScratch(checked.scratch, store.dir, vmm);
    out.push(["pid", String(pid)]);
    await o.hook.at("spawned");

    // The first attachment of a fresh VM: no earlier epoch's bytes to drop, and a layered root's worker accepts
    // nothing but its configuration or Stop before the root, so no synchronizing Echo either.
    client = await FramingClient.attach(await connectControl(store.path(CONTROL_SOCKET), vmm, o.timeoutMs), {
      channelKey: capability,
      requestTimeoutMs: o.timeoutMs,
    });
    out.push(["instance", vmm.startTime], ["epoch", "1"]);
    if (config !== null) {
      await client.send(Kind.RootConfig, new TextEncoder().encode(rootConfigText(config)));
      const m = await client.receive(o.timeoutMs);
      if (m.kind === Kind.RootFailed) {
        const f = decodeRootFailure(m.body);
        out.push(["root", "failed"], ["stage", f.stage], ["problem", f.problem]);
        client.close();
        client = null;
        const ended = await waitExit(vmm, o.timeoutMs);
        closeChecked();
        const outcome = await readOutcome(store.path(VMM_LOG));
        out.push(["outcome", outcome.text], ["teardown", ended ? "complete" : "incomplete"]);
        if (!ended) Deno.kill(vmm.pid, "SIGKILL");
        await abandon(store, checked?.scratch ?? null);
        vmm = null;
        const want = stageSpec(f.stage).status;
        if (ended && outcome.status === want) return { code: EXIT_ROOT_FAILED, out };
        return { code: EXIT_FAILED, out, problem: `the VM ended with ${outcome.text}, not guest-exit ${want}` };
      }
      if (m.kind !== Kind.Ready) throw new Error(`the root configuration was answered with kind ${m.kind}`);
      out.push(["root", "ready"], ["build", decodeReady(m.body)]);
      closeChecked();
      await o.hook.at("ready");
    }
    await client.ping();
    await client.echo(new Uint8Array(kindSpec(Kind.Echo)!.limit).fill(0x5a));
    await o.hook.at("commit");
    await store.write(
      RUNTIME_RECORD,
      JSON.stringify({
        format: 1,
        vmm,
        identity: o.artifacts.identity,
        mode: o.layered ? "layered" : "blockless",
        epoch: 1,
      }),
    );
    await store.remove(LAUNCH_JOURNAL);
    client.close();
    client = null;
    vmm = null; // committed: it runs on
    return { code: EXIT_OK, out };
  } catch (e) {
    return { code: EXIT_FAILED, out, problem: `launch failed: ${e instanceof Error ? e.message : String(e)}` };
  } finally {
    client?.close();
    if (vmm !== null && await isAlive(vmm)) {
      Deno.kill(vmm.pid, "SIGKILL");
      await waitExit(vmm, 10_000);
      await abandon(store, checked?.scratch ?? null);
    }
    closeChecked();
    store.unlock();
  }
}

/** Removes what a launch that did not commit wrote (the VMM's log stays, for the diagnostic). */
async function abandon(store: SandboxStore, scratch: string | null): Promise<void> {
  for (const f of [LAUNCH_JOURNAL, LAUNCH_RECORD, RUNTIME_RECORD, INITRAMFS_FILE, CONTROL_SOCKET, CAPABILITY_FILE]) {
    await store.remove(f);
  }
  if (scratch !== null) await releaseScratch(scratch, store.dir);
}
