/**
 * Test support: a helper served in-process on a unix socket in a temp root, over temp roots instead of the host —
 * a CDI dir and an env dir, a simulated cgroupfs tree, a fake /proc and /sys (meminfo, huge pages, NUMA nodes, PCI
 * NUMA affinity, cpuinfo), a fixed boot id, `fixtures/nvidia/fake-nvidia-smi` for resets and a recording rebooter —
 * with a {@link HelperClient} connected to it. Contract suites run the node's helper-backed ports against it.
 *
 * @module
 */
import type { AccessHost } from "../../core/access/mod.ts";
import type { KindRole } from "../../core/commands/kinds.ts";
import type { LibvirtHostPort } from "../../core/converge/instances/domain_plan.ts";
import { type Logger, memoryLogger } from "../../core/log/mod.ts";
import { CdiHoldStore } from "../cdi/hold_store.ts";
import { ProcHostMemory } from "../cgroup/host_memory.ts";
import { ProcMemoryPressure } from "../cgroup/memory_pressure.ts";
import { setSimPopulated, SimSliceManager } from "../cgroup/sim_slices.ts";
import type { SliceSubject } from "../cgroup/trees_testing.ts";
import { SysfsHostInventory } from "../host/inventory.ts";
import { hgxInventory } from "../nvidia/hgx.ts";
import { NvidiaSmi, readPciNumaNode, sysfsBdf } from "../nvidia/nvidia_smi.ts";
import type { HelperBackends } from "./backends.ts";
import { HelperClient } from "./client.ts";
import type { Nft } from "../../core/netpolicy/mod.ts";
import { FakeNft } from "../nft/fake_nft.ts";
import type {
  HugepagePort,
  KernelModulesPort,
  KubernetesPort,
  MigPort,
  PackagePort,
  SharingPort,
  SysctlPort,
} from "../../core/host/mod.ts";
import { FakeKernelModules, FakeMig, FakePackages, FakeSharing } from "../../core/host/fakes.ts";
import { FakeKubernetes } from "../../core/host/fake_kubernetes.ts";
import { DirPluginSource, type PluginSource } from "../../core/plugins/mod.ts";
import { SysctlFiles } from "../host/sysctl_files.ts";
import { SysfsHugepages } from "../host/sysfs_hugepages.ts";
import { HelperSliceManager } from "./ports.ts";
import { type HelperListener, HelperServer, type HelperServerOptions } from "./server.ts";

const FIX = new URL("../../fixtures/nvidia/", import.meta.url).pathname;

/** The boot id the test helper answers. */
export const TEST_BOOT_ID = "b0071d00-0000-4000-8000-00000000beef";

/** A helper in a temp root and a client of it. */
export interface TestHelper {
  readonly root: string;
  readonly socket: string;
  readonly cdiDir: string;
  readonly envDir: string;
  readonly cgroupRoot: string;
  /** The fake /proc and /sys. */
  readonly proc: string;
  readonly sys: string;
  /** The nvidia-smi wrapper the helper resets with (`FAKE_SMI_*` set; `smiEnv` sourced on each run). */
  readonly smi: string;
  /** A file of shell `export` lines the wrapper sources (e.g. `FAKE_SMI_RESET_RC=15`). */
  readonly smiEnv: string;
  /** The argv lines the fake nvidia-smi logged. */
  smiLog(): Promise<string[]>;
  readonly server: HelperServer;
  readonly listener: HelperListener;
  readonly client: HelperClient;
  readonly backends: HelperBackends;
  /** Reasons the recording rebooter was asked to reboot with. */
  readonly reboots: string[];
  /** The helper's log lines. */
  readonly logs: Record<string, unknown>[];
  close(): Promise<void>;
}

async function _put(path: string, text: string): Promise<void> {
  await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
  await Deno.writeTextFile(path, text);
}

/** Writes a small host under `root`: /proc (meminfo, cpuinfo, hostname), /sys (huge pages, 2 NUMA nodes, the HGX GPUs' PCI NUMA). */
export async function writeFakeHost(root: string): Promise<{ proc: string; sys: string }> {
  const proc = `${root}/proc`;
  const sys = `${root}/sys`;
  await _put(
    `${proc}/meminfo`,
    "MemTotal:       65536000 kB\nMemFree:        1000 kB\nMemAvailable:   40000000 kB\nHugetlb:        2097152 kB\n",
  );
  await _put(
    `${proc}/cpuinfo`,
    [0, 1, 2, 3].map((p) => `processor\t: ${p}\nmodel name\t: Test CPU\nphysical id\t: 0\ncore id\t\t: ${p}\n`).join(
      "\n",
    ),
  );
  await _put(`${proc}/sys/kernel/hostname`, "helper-test\n");
  await _put(`${proc}/sys/kernel/random/boot_id`, `${TEST_BOOT_ID}\n`);
  for (const [size, free] of [["2048kB", 512], ["1048576kB", 2]] as const) {
    await _put(`${sys}/kernel/mm/hugepages/hugepages-${size}/free_hugepages`, `${free}\n`);
    await _put(`${sys}/kernel/mm/hugepages/hugepages-${size}/resv_hugepages`, "0\n");
    for (const n of [0, 1]) {
      const d = `${sys}/devices/system/node/node${n}`;
      await _put(`${d}/hugepages/hugepages-${size}/free_hugepages`, `${free / 2}\n`);
      await _put(`${d}/hugepages/hugepages-${size}/nr_hugepages`, `${free / 2}\n`);
    }
  }
  for (const n of [0, 1]) await _put(`${sys}/devices/system/node/node${n}/cpulist`, n === 0 ? "0-1\n" : "2-3\n");
  for (const g of hgxInventory().gpus) {
    await _put(`${sys}/bus/pci/devices/${sysfsBdf(g.pciBusId)}/numa_node`, `${g.numaNode}\n`);
  }
  return { proc, sys };
}

/** Starts a helper over temp roots and connects a client. */
export async function startTestHelper(
  opts: {
    maxInFlight?: number;
    log?: Logger;
    role?: KindRole;
    nft?: Nft;
    sysctl?: SysctlPort;
    hugepages?: HugepagePort;
    modules?: KernelModulesPort;
    packages?: PackagePort;
    mig?: MigPort;
    sharing?: SharingPort;
    kubernetes?: KubernetesPort;
    /** The plugins (default: an empty directory in the temp root, started as this process's user). */
    plugins?: PluginSource;
    server?: Partial<
      Pick<HelperServerOptions, "idleMs" | "partialLineMs" | "writeStallMs" | "maxConnections" | "clock">
    >;
    libvirt?: LibvirtHostPort;
    ch?: HelperBackends["ch"];
    access?: AccessHost;
    /** `dcgm.diag`'s backend (default: dcgmi is not installed). */
    dcgmDiag?: HelperBackends["dcgmDiag"];
    /** `host.doctor`'s backend (default: none, the op fails). */
    doctor?: HelperBackends["doctor"];
    /** The `disk.*` ops' backend (default: none, the ops fail). */
    disks?: HelperBackends["disks"];
    /** The `disk.deploy` op's backend (default: none, the op fails). */
    deploys?: HelperBackends["deploys"];
    /** The `kexec.*` ops' backend (default: none, the ops fail). */
    kexec?: HelperBackends["kexec"];
  } = {},
): Promise<TestHelper> {
  const root = await Deno.makeTempDir({ prefix: "bcd-helper-" });
  const { proc, sys } = await writeFakeHost(root);
  const cdiDir = `${root}/etc/cdi`;
  const envDir = `${root}/run/bcd/allocations`;
  const cgroupRoot = `${root}/cgroup`;
  const smiLogPath = `${root}/smi.log`;
  const smiEnv = `${root}/smi.env`;
  await Deno.writeTextFile(smiEnv, "");
  const smi = `${root}/nvidia-smi`;
  await Deno.writeTextFile(
    smi,
    `#!/bin/sh\nexport FAKE_SMI_LOG='${smiLogPath}' FAKE_SMI_XML='${FIX}hgx8_mig2.xml' FAKE_SMI_LIST='${FIX}hgx8_mig2.list.txt'\n. '${smiEnv}'\nexec '${FIX}fake-nvidia-smi' "$@"\n`,
  );
  await Deno.chmod(smi, 0o755);
  const reboots: string[] = [];
  const tool = new NvidiaSmi({ binary: smi, timeoutMs: 20_000 });
  const backends: HelperBackends = {
    bootId: () => Promise.resolve(TEST_BOOT_ID),
    inventory: new SysfsHostInventory({ proc, sys, etc: `${root}/etc`, dev: `${root}/dev`, interfaces: () => [] }),
    memory: new ProcHostMemory({ proc, sys }),
    pressure: new ProcMemoryPressure(proc),
    numaNode: (id) => readPciNumaNode(`${sys}/bus/pci/devices`, id),
    holds: new CdiHoldStore({ cdiDir, envDir }),
    slices: new SimSliceManager(cgroupRoot),
    gpuReset: (uuid) => tool.reset(uuid),
    dcgmDiag: opts.dcgmDiag ?? (() => Promise.resolve(null)),
    rebooter: {
      reboot: (reason) => {
        reboots.push(reason);
        return Promise.resolve();
      },
    },
    nft: opts.nft ?? new FakeNft(),
    sysctl: opts.sysctl ?? new SysctlFiles({ procSys: `${proc}/sys`, etc: `${root}/etc` }),
    hugepages: opts.hugepages ?? new SysfsHugepages({ sys, etc: `${root}/etc` }),
    modules: opts.modules ?? new FakeKernelModules([]),
    packages: opts.packages ?? new FakePackages(),
    mig: opts.mig ?? new FakeMig({}),
    sharing: opts.sharing ?? new FakeSharing([]),
    kubernetes: opts.kubernetes ?? new FakeKubernetes(),
    plugins: opts.plugins ?? new DirPluginSource({ dir: `${root}/plugins` }),
    ...(opts.libvirt ? { libvirt: opts.libvirt } : {}),
    ...(opts.ch ? { ch: opts.ch } : {}),
    ...(opts.access ? { access: opts.access } : {}),
    ...(opts.doctor ? { doctor: opts.doctor } : {}),
    ...(opts.disks ? { disks: opts.disks } : {}),
    ...(opts.deploys ? { deploys: opts.deploys } : {}),
    ...(opts.kexec ? { kexec: opts.kexec } : {}),
  };
  const mem = memoryLogger("debug");
  const server = new HelperServer(backends, {
    log: opts.log ?? mem.logger,
    maxInFlight: opts.maxInFlight,
    ...(opts.role ? { role: opts.role } : {}),
    ...opts.server,
  });
  const socket = `${root}/run/bcd/helper.sock`;
  const listener = await server.listen(socket);
  const client = new HelperClient({ socket });
  return {
    root,
    socket,
    cdiDir,
    envDir,
    cgroupRoot,
    proc,
    sys,
    smi,
    smiEnv,
    smiLog: async () =>
      (await Deno.readTextFile(smiLogPath).catch((e) => {
        if (e instanceof Deno.errors.NotFound) return ""; // the fake nvidia-smi has not run yet
        throw e;
      })).split("\n").filter(Boolean),
    server,
    listener,
    client,
    backends,
    reboots,
    logs: mem.lines,
    close: async () => {
      client.close();
      await listener.close();
      await Deno.remove(root, { recursive: true });
    },
  };
}

/** The slice contract's subject: the node's `HelperSliceManager` over a helper whose slices are a simulated tree. */
export async function helperSliceSubject(): Promise<SliceSubject> {
  const h = await startTestHelper();
  return {
    name: "HelperSliceManager over the helper (simulated cgroupfs)",
    mgr: new HelperSliceManager(h.client),
    root: h.cgroupRoot,
    settings: {
      allowedCpus: "0-3",
      allowedMemoryNodes: "0",
      cpuQuotaPercent: 150,
      memoryMaxBytes: 2 ** 30,
      memoryHighBytes: Math.floor(2 ** 30 * 0.9),
      hugetlb2MBMaxBytes: 4 * 2 ** 21,
    },
    afterCreate: () => Promise.resolve(),
    setPopulated: (name, p) => setSimPopulated(h.cgroupRoot, name, p),
    cleanup: () => h.close(),
  };
}
