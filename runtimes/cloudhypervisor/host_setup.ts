/**
 * The `cloud-hypervisor` runtime's root half for the helper (seed 000 §The runtimes: "the `cloud-hypervisor` binary
 * turns on `cloud-hypervisor`"; no configuration key): {@link chBackend} answers a {@link ChHost} when root's `PATH`
 * has an executable `cloud-hypervisor`, with the real `systemd-run`/`systemctl`, `ip` taps and the `SCM_RIGHTS`
 * sender, else `undefined`, and the helper refuses every `ch.*` op `failed` with "cloud-hypervisor is not installed
 * on this host" (the node then leaves the runtime off and does not advertise it).
 *
 * @module
 */
import type { Logger } from "../../core/log/mod.ts";
import { ChHost } from "./ch_host.ts";
import { ScmRightsSender } from "./fd_sender.ts";
import { IpTaps } from "./ip_taps.ts";
import { SystemdUnits } from "./units.ts";
import { VfioBinder } from "./vfio.ts";

/** The absolute path of an executable `cmd` on `path` (a `PATH` value), or `undefined`. */
export async function findOnPath(cmd: string, path: string): Promise<string | undefined> {
  for (const dir of path.split(":")) {
    if (!dir.startsWith("/")) continue;
    const p = `${dir}/${cmd}`;
    try {
      const st = await Deno.stat(p);
      if (st.isFile && st.mode !== null && (st.mode & 0o111) !== 0) return p;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound || e instanceof Deno.errors.PermissionDenied)) throw e;
    }
  }
  return undefined;
}

/** Root's half, or `undefined` without the binary. The taps belong to the owner of the node's data dir. */
export async function chBackend(
  dataDir: string,
  opts: {
    log?: Logger;
    bridges: readonly string[];
    path?: string;
    /** This host's GPUs' bus ids (nvidia-smi's), which alone may be passed through; none without it. */
    hostGpus?: () => Promise<readonly string[]>;
    /** The UUIDs of the GPUs device holds name, never passed through. */
    busyGpus?: () => Promise<readonly string[]>;
  },
): Promise<ChHost | undefined> {
  const binary = await findOnPath("cloud-hypervisor", opts.path ?? Deno.env.get("PATH") ?? "");
  if (!binary) {
    opts.log?.info({}, "cloud-hypervisor: the binary is not on PATH; runtime off");
    return undefined;
  }
  const owner = (await Deno.stat(dataDir)).uid ?? 0;
  opts.log?.info({ binary, tap_owner: owner }, "cloud-hypervisor: runtime on");
  return new ChHost({
    runtimeDir: `${dataDir}/cloud-hypervisor`,
    volumesDir: `${dataDir}/volumes`,
    binary,
    bridges: opts.bridges,
    tapOwner: owner,
    underHelper: true,
    units: new SystemdUnits(),
    taps: new IpTaps(),
    fds: new ScmRightsSender(),
    ...(opts.hostGpus ? { vfio: new VfioBinder({ sys: "/sys", dev: "/dev" }), hostGpus: opts.hostGpus } : {}),
    ...(opts.busyGpus ? { busyGpus: opts.busyGpus } : {}),
  });
}
