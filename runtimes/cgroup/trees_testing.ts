/**
 * Test support: the three places the slice managers are tested — a simulated cgroupfs tree in a temp dir (for the
 * memory/cpu/cpuset files this machine's cgroup2 mount lacks), the same tree behind `fixtures/cgroup/fake-systemctl`,
 * and the real cgroup2 mount at `/sys/fs/cgroup/unified` (hugetlb only), in a test-owned subtree that is removed
 * afterwards with the root's `cgroup.subtree_control` put back as it was.
 *
 * @module
 */
import type { SliceManager } from "../../core/converge/devices/ports.ts";
import type { SliceSettings } from "../../core/converge/devices/slice.ts";
import { CgroupfsSliceManager } from "./cgroupfs.ts";
import { ensureSimTree, setSimPopulated, SIM_CONTROLLERS, SimSliceManager } from "./sim_slices.ts";
import { isPopulated, removeCgroupTree, sliceDir } from "./cgroup_files.ts";
import { SystemdSliceManager } from "./systemd.ts";

/** Every controller the fake tree offers. */
export const FAKE_CONTROLLERS = SIM_CONTROLLERS;

/** A slice manager under test, with the means to play a workload. */
export interface SliceSubject {
  readonly name: string;
  readonly mgr: SliceManager;
  /** The cgroup-v2 root it works under. */
  readonly root: string;
  /** Settings this subject's cgroups can take. */
  readonly settings: SliceSettings;
  /** What the kernel does after a cgroup directory appears (fake trees: create `cgroup.events`). */
  afterCreate(name: string): Promise<void>;
  /** Puts a process in the slice (or takes it out). */
  setPopulated(name: string, populated: boolean): Promise<void>;
  cleanup(): Promise<void>;
}

/** A fake cgroup-v2 root in a temp dir, with the slice's ancestors. */
export async function fakeCgroupRoot(): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "bcd-cgroupfs-" });
  await ensureSimTree(root);
  return root;
}

const FULL: SliceSettings = {
  allowedCpus: "0-3",
  allowedMemoryNodes: "0",
  cpuQuotaPercent: 150,
  memoryMaxBytes: 2 ** 30,
  memoryHighBytes: Math.floor(2 ** 30 * 0.9),
  hugetlb2MBMaxBytes: 4 * 2 ** 21,
};

/** The cgroupfs manager on a fake tree (the sim role's slice manager). */
export async function fakeCgroupfsSubject(): Promise<SliceSubject> {
  const root = await fakeCgroupRoot();
  return {
    name: "cgroupfs on a fake tree",
    mgr: new SimSliceManager(root),
    root,
    settings: FULL,
    afterCreate: () => Promise.resolve(),
    setPopulated: (name, p) => setSimPopulated(root, name, p),
    cleanup: () => Deno.remove(root, { recursive: true }),
  };
}

/** Where the fake systemctl is. */
export const FAKE_SYSTEMCTL = new URL("../../fixtures/cgroup/fake-systemctl", import.meta.url).pathname;

/** The systemd manager driving `fixtures/cgroup/fake-systemctl` over a fake tree; `log` holds its argv lines. */
export async function fakeSystemdSubject(): Promise<SliceSubject & { log: string; env: string }> {
  const root = await Deno.makeTempDir({ prefix: "bcd-systemd-" });
  await Deno.writeTextFile(`${root}/cgroup.controllers`, FAKE_CONTROLLERS);
  await Deno.writeTextFile(`${root}/cgroup.subtree_control`, "");
  const log = `${root}.systemctl.log`;
  const env = `${root}.env`;
  await Deno.writeTextFile(env, "");
  const bin = `${root}.systemctl`;
  await Deno.writeTextFile(
    bin,
    `#!/bin/sh\nexport FAKE_SYSTEMCTL_LOG='${log}' FAKE_CGROUP_ROOT='${root}'\n. '${env}'\nexec '${FAKE_SYSTEMCTL}' "$@"\n`,
  );
  await Deno.chmod(bin, 0o755);
  return {
    name: "systemd via a fake systemctl",
    mgr: new SystemdSliceManager({ systemctl: bin, cgroupRoot: root, timeoutMs: 20_000 }),
    root,
    log,
    env,
    settings: FULL,
    afterCreate: () => Promise.resolve(),
    setPopulated: (name, p) => setSimPopulated(root, name, p),
    cleanup: async () => {
      await Deno.remove(root, { recursive: true });
      for (const f of [log, env, bin]) {
        await Deno.remove(f).catch((e) => {
          if (!(e instanceof Deno.errors.NotFound)) throw e;
        });
      }
    },
  };
}

/** Marks that a test, not the host, enabled hugetlb in the real mount's root. */
const _ENABLED_MARK = "/tmp/bcd-cgroup-test-enabled-hugetlb";

/** The real cgroup2 mount this machine offers, and why it cannot be used when it cannot. */
export const REAL_CGROUP2 = "/sys/fs/cgroup/unified";

/** The page sizes the real-cgroup tests use, by the name the kernel gives their hugetlb files. */
export const TEST_PAGE_SIZES = { "2MB": 2 * 2 ** 20, "1GB": 2 ** 30 } as const;

/** The huge page sizes this host has, in bytes (`/sys/kernel/mm/hugepages/hugepages-<kB>kB`). */
export function hostPageSizesSync(): number[] {
  const out: number[] = [];
  try {
    for (const e of Deno.readDirSync("/sys/kernel/mm/hugepages")) {
      const m = /^hugepages-(\d{1,12})kB$/.exec(e.name);
      if (m) out.push(Number(m[1]) * 1024);
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return out.sort((a, b) => a - b);
}

/**
 * Why the real cgroup2 tests cannot use a page size (`2MB`, `1GB`) here, or `undefined` when they can: the kernel
 * offers `hugetlb.<size>.*` only for the sizes the host has. Printed once per test file that skips it.
 */
export function pageSizeUnavailable(size: keyof typeof TEST_PAGE_SIZES): string | undefined {
  if (hostPageSizesSync().includes(TEST_PAGE_SIZES[size])) return undefined;
  return `this host has no ${size} huge pages (no /sys/kernel/mm/hugepages/hugepages-${
    TEST_PAGE_SIZES[size] / 1024
  }kB), so the kernel offers no hugetlb.${size}.max`;
}

/** Why the real cgroup2 tests cannot run here, or `undefined` when they can. */
export function realCgroupUnavailable(): string | undefined {
  try {
    const controllers = Deno.readTextFileSync(`${REAL_CGROUP2}/cgroup.controllers`).trim().split(/\s+/);
    if (!controllers.includes("hugetlb")) return `${REAL_CGROUP2} offers no hugetlb controller`;
    if (Deno.uid?.() !== 0) return "not root";
    if (pageSizeUnavailable("2MB") && pageSizeUnavailable("1GB")) return "this host has neither 2MB nor 1GB huge pages";
    return undefined;
  } catch (e) {
    return `${REAL_CGROUP2} is not a cgroup2 mount here (${(e as Error).message})`;
  }
}

/**
 * The cgroupfs manager on the real mount, in a test-owned subtree `bcd-test-<random>`. Setting it up enables
 * `hugetlb` in the mount root's `cgroup.subtree_control` when it was not; cleanup kills the test's processes,
 * removes the subtree and restores that.
 */
export async function realCgroupfsSubject(): Promise<SliceSubject> {
  const top = REAL_CGROUP2;
  const before = Deno.readTextFileSync(`${top}/cgroup.subtree_control`).trim().split(/\s+/).filter(Boolean);
  const root = `${top}/bcd-test-${crypto.randomUUID().slice(0, 8)}`;
  if (!before.includes("hugetlb")) {
    await Deno.writeTextFile(`${top}/cgroup.subtree_control`, "+hugetlb");
    await Deno.writeTextFile(_ENABLED_MARK, "bcd tests enabled hugetlb in the cgroup2 root\n");
  }
  await Deno.mkdir(root);
  const procs = new Map<string, Deno.ChildProcess>();
  const stop = async (name: string) => {
    const p = procs.get(name);
    if (!p) return;
    procs.delete(name);
    p.kill("SIGKILL");
    await p.status;
    // The kernel updates cgroup.events once the exit is accounted; wait for it (bounded).
    const populated = () =>
      isPopulated(sliceDir(root, name)).catch((e) => {
        if (e instanceof Deno.errors.NotFound) return false; // the slice is gone: nothing left in it
        throw e;
      });
    for (let i = 0; i < 200 && await populated(); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  return {
    name: "cgroupfs on the real cgroup2 mount (hugetlb)",
    mgr: new CgroupfsSliceManager({ root }),
    root,
    // Only the page sizes this host has: the kernel offers no hugetlb file for the others.
    settings: {
      ...(pageSizeUnavailable("2MB") ? {} : { hugetlb2MBMaxBytes: 3 * 2 ** 21 }),
      ...(pageSizeUnavailable("1GB") ? {} : { hugetlb1GBMaxBytes: 2 ** 30 }),
    },
    afterCreate: () => Promise.resolve(),
    setPopulated: async (name, populated) => {
      if (!populated) return await stop(name);
      const p = new Deno.Command("sleep", { args: ["60"], stdin: "null", stdout: "null", stderr: "null" }).spawn();
      procs.set(name, p);
      await Deno.writeTextFile(`${sliceDir(root, name)}/cgroup.procs`, `${p.pid}\n`);
    },
    cleanup: async () => {
      for (const n of [...procs.keys()]) await stop(n);
      await removeCgroupTree(root);
      // Put the root back once no test subtree is left (test files run in parallel), if a test enabled it.
      for await (const e of Deno.readDir(top)) if (e.isDirectory && e.name.startsWith("bcd-test-")) return;
      if (await Deno.remove(_ENABLED_MARK).then(() => true, () => false)) {
        await Deno.writeTextFile(`${top}/cgroup.subtree_control`, "-hugetlb");
      }
    },
  };
}
