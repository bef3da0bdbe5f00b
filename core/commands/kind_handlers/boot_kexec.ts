/**
 * `boot.kexec` (control lane, ramdisk, self-terminating, 15 minutes): the ramdisk boots the deployed system without
 * going through the firmware. Root loads the kernel (the helper's `kexec.load`: from the deployed disk's filesystem,
 * mounted read-only by root, or from https URLs with digests; `kexec -l`), then jumps into it (`kexec.exec`:
 * `kexec -e`). The dispatcher journaled `running{boot_id}` before this handler ran (000 §Durability: self-terminating
 * kinds write it immediately before their side effect), so the jump is journaled first; this handler never reports
 * success itself. The command completes as the seed's recovery table says: an agent that starts on a later boot
 * reports `SUCCEEDED` with `rebooted`, and the control plane completes it when it sees the deployed OS (the ramdisk's
 * journal lives in its RAM and goes with it).
 *
 * Payload (`BootKexecPayload`), judgement calls written down:
 * - `kernel` an https URL: `kernel_sha256` is required (and `initrd_sha256` with an `initrd` URL), `root_device`
 *   must be empty;
 * - `kernel` an absolute path: read from the filesystem of a partition of `root_device` (a `/dev/disk/by-id` path or
 *   bare name) — the partition the command line's `root=UUID=|PARTUUID=|LABEL=|PARTLABEL=` names, else the first
 *   that holds the path; digests optional (checked when given);
 * - `cmdline`: printable ASCII, at most 2047 characters; anything else is `invalid-payload` before queueing.
 *
 * A load that fails fails the command with root's reason (`kernel-not-found`, `initrd-not-found`, `digest-mismatch`,
 * `mounted`, `not-https`, `kexec-failed`, …); a jump that does not happen within {@link KEXEC_GRACE_MS} fails
 * `kexec-failed`. It takes the `host` lock: nothing else acts on the machine while it goes down.
 *
 * @module
 */
import { unpackPayload, WireDecodeError } from "../../../proto/mod.ts";
import { sleepUnlessAborted } from "../../clock.ts";
import { isDiskId } from "../../disks/disk_id.ts";
import type { HandlerContext, HandlerResult, KindHandler } from "../handlers.ts";
import { HOST_LOCK } from "../locks.ts";
import { CommandFailed, InvalidPayload, LeftForRecovery } from "../rejection.ts";

/** Where root takes the kernel from (the helper's `kexec.load` arguments). */
export type KexecLoadArgs =
  | {
    readonly source: "disk";
    readonly diskId: string;
    readonly kernel: string;
    readonly initrd?: string;
    readonly cmdline: string;
    readonly kernelSha256?: string;
    readonly initrdSha256?: string;
  }
  | {
    readonly source: "url";
    readonly kernel: string;
    readonly kernelSha256: string;
    readonly initrd?: string;
    readonly initrdSha256?: string;
    readonly cmdline: string;
  };

/** What root loaded, or why not, as data. */
export type KexecLoadAnswer =
  | {
    readonly ok: true;
    readonly kernelSha256: string;
    readonly initrdSha256?: string;
    /** With source disk: the partition the files came from. */
    readonly partition?: number;
  }
  | { readonly ok: false; readonly reason: string; readonly message: string };

/** Root's kexec: load, then jump. */
export interface Kexec {
  load(a: KexecLoadArgs): Promise<KexecLoadAnswer>;
  /** Resolves once root took the jump in hand; the process ends soon after. */
  exec(): Promise<void>;
}

/** How long the handler waits for its own end after the jump was asked for. */
export const KEXEC_GRACE_MS = 5 * 60_000;

const _BY_ID = "/dev/disk/by-id/";

/** The `boot.kexec` handler. `sleep` is injected so tests do not wait the grace period. */
export function bootKexecHandler(ports: {
  kexec: Kexec;
  graceMs?: number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}): KindHandler {
  const sleep = ports.sleep ?? sleepUnlessAborted;
  return {
    kind: "boot.kexec",
    resources(command) {
      _payload(command.payload);
      return [HOST_LOCK];
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      const a = _payload(ctx.command.payload);
      const loaded = await ports.kexec.load(a);
      if (!loaded.ok) throw new CommandFailed(loaded.reason, `boot.kexec: ${loaded.message}`);
      ctx.logger.warn(
        { kernel_sha256: loaded.kernelSha256, partition: loaded.partition ?? null },
        "boot.kexec: kernel loaded; jumping into it",
      );
      try {
        await ports.kexec.exec();
      } catch (e) {
        throw new CommandFailed("kexec-failed", `boot.kexec: ${e instanceof Error ? e.message : e}`, { cause: e });
      }
      await sleep(ports.graceMs ?? KEXEC_GRACE_MS, ctx.stopping);
      if (ctx.stopping?.aborted) throw new LeftForRecovery("boot.kexec: the ramdisk stops for the loaded kernel");
      throw new CommandFailed("kexec-failed", "boot.kexec: kexec -e was asked for but the ramdisk is still running");
    },
  };
}

function _payload(p: { typeUrl: string; value: Uint8Array } | undefined): KexecLoadArgs {
  if (p === undefined) throw new InvalidPayload("boot.kexec: no payload");
  let w;
  try {
    w = unpackPayload("boot.kexec", { type_url: p.typeUrl, value: p.value });
  } catch (e) {
    if (e instanceof WireDecodeError) throw new InvalidPayload(e.message, { cause: e });
    throw e;
  }
  const cmdline = w.cmdline ?? "";
  if (cmdline.length > 2047 || !/^[\x20-\x7e]*$/.test(cmdline)) {
    throw new InvalidPayload(`boot.kexec: cmdline ${JSON.stringify(cmdline)} is not printable ASCII of 2047 at most`);
  }
  const sha = (name: string, v: string | undefined, required: boolean): string | undefined => {
    const s = (v ?? "").toLowerCase();
    if (s === "" && !required) return undefined;
    if (!/^[0-9a-f]{64}$/.test(s)) {
      throw new InvalidPayload(`boot.kexec: ${name} ${JSON.stringify(v)} is not a SHA-256`);
    }
    return s;
  };
  const kernel = w.kernel ?? "";
  const initrd = w.initrd ?? "";
  if (kernel.startsWith("https://")) {
    if (w.root_device) throw new InvalidPayload("boot.kexec: root_device is not taken with a kernel URL");
    if (initrd !== "" && !initrd.startsWith("https://")) {
      throw new InvalidPayload(`boot.kexec: initrd ${JSON.stringify(initrd)} is not https like the kernel`);
    }
    const initrdSha256 = sha("initrd_sha256", w.initrd_sha256, initrd !== "");
    return {
      source: "url",
      kernel,
      kernelSha256: sha("kernel_sha256", w.kernel_sha256, true)!,
      ...(initrd ? { initrd, initrdSha256: initrdSha256! } : {}),
      cmdline,
    };
  }
  const path = (name: string, v: string) => {
    if (!v.startsWith("/") || v.length > 1024 || v.split("/").includes("..") || !/^[\x20-\x7e]*$/.test(v)) {
      throw new InvalidPayload(`boot.kexec: ${name} ${JSON.stringify(v)} is neither an https URL nor an absolute path`);
    }
    return v;
  };
  const dev = w.root_device ?? "";
  const diskId = dev.startsWith(_BY_ID) ? dev.slice(_BY_ID.length) : dev;
  if (!isDiskId(diskId)) {
    throw new InvalidPayload(`boot.kexec: root_device ${JSON.stringify(dev)} is not a /dev/disk/by-id path`);
  }
  const kernelSha256 = sha("kernel_sha256", w.kernel_sha256, false);
  const initrdSha256 = sha("initrd_sha256", w.initrd_sha256, false);
  return {
    source: "disk",
    diskId,
    kernel: path("kernel", kernel),
    ...(initrd ? { initrd: path("initrd", initrd) } : {}),
    cmdline,
    ...(kernelSha256 ? { kernelSha256 } : {}),
    ...(initrdSha256 ? { initrdSha256 } : {}),
  };
}
