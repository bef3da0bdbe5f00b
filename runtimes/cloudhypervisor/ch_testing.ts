/**
 * Test support: a `cloud-hypervisor` runtime wired to fakes — {@link FakeSystemd} (each unit a {@link FakeVmm} on the
 * instance's `api.sock`), {@link FakeTaps}, {@link FakeFdSender} — through the in-process root side {@link ChHost},
 * over a loopback https image server. Its clock moves by what the runtime sleeps (no real waiting). The guests' memory
 * use is read by the real {@link CgroupVmmMemory} from a cgroup tree in the scratch directory, which
 * {@link ChTestEnv.setGuestUse} writes.
 *
 * @module
 */
import { type ImageServer, startImageServer } from "../../fixtures/libvirt/image_server.ts";
import { ChHost } from "./ch_host.ts";
import { ChRuntime } from "./ch_runtime.ts";
import { SnapshotStore } from "../libvirt/snapshot_store.ts";
import { FakeSystemd } from "./fake_systemd.ts";
import { FakeFdSender, FakeTaps } from "./fake_taps.ts";
import type { VfioBinder } from "./vfio.ts";
import { RecordingAccess } from "./vmm_access.ts";
import type { ChHostPort } from "../../core/converge/instances/ch_port.ts";
import { CgroupVmmMemory } from "./vmm_memory.ts";
import { skipStep } from "../../fixtures/skip_step.ts";

/** A wired runtime and its fakes. */
export interface ChTestEnv {
  readonly rt: ChRuntime;
  readonly host: ChHost;
  readonly systemd: FakeSystemd;
  readonly taps: FakeTaps;
  readonly srv: ImageServer;
  readonly dir: string;
  readonly dataDir: string;
  readonly clock: { t: number };
  /** The ACL grants and revokes the runtime asked for. */
  readonly access: RecordingAccess;
  /** Writes the `memory.stat` of instance `id`'s unit in the scratch cgroup tree: its guest uses `bytes`. */
  setGuestUse(id: string, bytes: number): Promise<void>;
  close(): Promise<void>;
}

/** Options of {@link chTestEnv}. */
export interface ChTestOptions {
  readonly bridges?: readonly string[];
  /** Replaces the port the runtime talks to (e.g. the helper's client over the same {@link ChHost}). */
  readonly port?: (host: ChHost) => Promise<{ port: ChHostPort; close(): Promise<void> }>;
  /** VFIO binding over a fake tree, and this host's GPUs. */
  readonly vfio?: {
    readonly binder: VfioBinder;
    readonly hostGpus: readonly string[];
    readonly busyGpus?: readonly string[];
  };
  /** The host CPU model a memory snapshot is checked against (default `test-cpu`). */
  readonly cpuModel?: string;
}

/** {@link chTestEnv} inside a test body: the environment, or undefined after {@link skipStep} recorded why not. */
export async function chTestEnvOrSkip(t: Deno.TestContext, opts: ChTestOptions = {}): Promise<ChTestEnv | undefined> {
  const env = await chTestEnv(opts);
  if (!("skip" in env)) return env;
  await skipStep(t, env.skip);
  return undefined;
}

/** Builds one, or says why it cannot run here. */
export async function chTestEnv(opts: ChTestOptions = {}): Promise<ChTestEnv | { skip: string }> {
  const srv = await startImageServer();
  if ("skip" in srv) return srv;
  const dir = await Deno.makeTempDir({ prefix: "bcd-ch-ct-" });
  const dataDir = `${dir}/data`;
  const systemd = new FakeSystemd();
  const taps = new FakeTaps();
  const vmmMemory = new CgroupVmmMemory({ cgroupRoot: `${dir}/cgroup` });
  const host = new ChHost({
    vmmMemory,
    runtimeDir: `${dataDir}/cloud-hypervisor`,
    volumesDir: `${dataDir}/volumes`,
    binary: "/usr/bin/cloud-hypervisor",
    bridges: opts.bridges ?? ["br-inst"],
    tapOwner: 1000,
    underHelper: false,
    units: systemd,
    taps,
    fds: new FakeFdSender(systemd),
    ...(opts.vfio
      ? {
        vfio: opts.vfio.binder,
        hostGpus: () => Promise.resolve(opts.vfio!.hostGpus),
        busyGpus: () => Promise.resolve(opts.vfio!.busyGpus ?? []),
      }
      : {}),
  });
  const via = opts.port ? await opts.port(host) : undefined;
  const clock = { t: 0 };
  const access = new RecordingAccess();
  const rt = new ChRuntime({
    access,
    host: via?.port ?? host,
    dataDir,
    fetch: srv.fetch,
    snapshots: new SnapshotStore({ dir: `${dataDir}/snapshots`, fetch: srv.fetch }),
    cpuModel: () => Promise.resolve(opts.cpuModel ?? "test-cpu"),
    clock: {
      monotonic: () => clock.t,
      sleep: (ms) => {
        clock.t += ms;
        return Promise.resolve();
      },
    },
  });
  return {
    rt,
    host,
    systemd,
    taps,
    srv,
    dir,
    dataDir,
    clock,
    access,
    setGuestUse: async (id, bytes) => {
      const f = vmmMemory.statFile(id);
      await Deno.mkdir(f.slice(0, f.lastIndexOf("/")), { recursive: true });
      await Deno.writeTextFile(f, `anon ${bytes}\nfile 0\nkernel 4096\n`);
    },
    close: async () => {
      systemd.killAll();
      await via?.close();
      await srv.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}
