/**
 * The node's instance wiring (`roles/node_instances.ts`) for each runtime mix the helper can offer — `libvirt-kvm`
 * only, `cloud-hypervisor` only, both, neither — over the in-process test helper with the fake virsh behind its
 * `libvirt.*` ops and the fake systemd/taps behind its `ch.*` ops. One row per mix: the capabilities `Hello`
 * advertises, whether a status report carries `volume_storage`, the crash leftovers removed at start, the snapshot
 * taker and the migrator, a rebind try and a balloon pass reaching each runtime, and `stop` ending the loops before
 * the helper closes.
 */
import assert from "node:assert/strict";
import { loadAgentConfig } from "../core/config/agent_config.ts";
import { memoryLogger } from "../core/log/mod.ts";
import { BALLOON_INTERVAL_MS } from "../core/balloon/loop.ts";
import type { SecretAnswer, SecretQuery } from "../core/converge/instances/user_data.ts";
import { ConvergenceEngine } from "../core/converge/engine.ts";
import { InstancesConverger } from "../core/converge/instances/converger.ts";
import { FakeClock } from "../fixtures/clock/fake_clock.ts";
import { startTestHelper } from "../runtimes/helper/helper_testing.ts";
import { FakeVirsh } from "../runtimes/libvirt/fake_virsh.ts";
import { LibvirtHost } from "../runtimes/libvirt/libvirt_host.ts";
import { ChHost } from "../runtimes/cloudhypervisor/ch_host.ts";
import { FakeSystemd } from "../runtimes/cloudhypervisor/fake_systemd.ts";
import { FakeFdSender, FakeTaps } from "../runtimes/cloudhypervisor/fake_taps.ts";
import { CgroupVmmMemory } from "../runtimes/cloudhypervisor/vmm_memory.ts";
import { CH_RUNTIME } from "../runtimes/cloudhypervisor/ch_runtime.ts";
import { snapshotsDir } from "../runtimes/libvirt/snapshots.ts";
import { SnapshotRouter } from "../runtimes/snapshot_router.ts";
import type { WiringContext } from "./_agent_cli.ts";
import { nodeInstances } from "./node_instances.ts";

const LIBVIRT = "libvirt-kvm";
const NETWORK = ["instance.network-policy", "instance.ssh-host-only"];
const BUNDLE = new TextEncoder().encode(JSON.stringify({ v: 1, account: "ubuntu", principals: "exec-r1" }));

/** One row per runtime mix. */
const MIXES: readonly { name: string; runtimes: readonly string[]; capabilities: readonly string[] }[] = [
  {
    name: "libvirt-kvm only",
    runtimes: [LIBVIRT],
    capabilities: ["instance.placement", "instance.volumes", ...NETWORK],
  },
  {
    name: "cloud-hypervisor only",
    runtimes: [CH_RUNTIME],
    capabilities: ["instance.placement", "instance.volumes", ...NETWORK],
  },
  {
    name: "both",
    runtimes: [LIBVIRT, CH_RUNTIME],
    capabilities: ["instance.placement", "instance.volumes", ...NETWORK],
  },
  { name: "neither", runtimes: [], capabilities: [] },
];

/** The `instance.snapshot` taker for each mix. */
const SNAPSHOTTER: Record<string, string | undefined> = {
  [LIBVIRT]: "LibvirtSnapshots",
  [CH_RUNTIME]: "ChSnapshots",
  [`${LIBVIRT}+${CH_RUNTIME}`]: "SnapshotRouter",
  "": undefined,
};

/** The crash leftovers of each runtime (a stage `cleanStaging` removes) under the node's data dir. */
function leftovers(dataDir: string): Record<string, string> {
  return {
    store: `${snapshotsDir(dataDir)}/upload-left`,
    [LIBVIRT]: `${dataDir}/libvirt/instances/.restore-left`,
    [CH_RUNTIME]: `${dataDir}/cloud-hypervisor/instances/.restore-left`,
  };
}

const exists = (p: string) =>
  Deno.lstat(p).then(() => true, (e) => {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  });

for (const mix of MIXES) {
  Deno.test(`node instance wiring, ${mix.name}: capabilities, volume_storage, crash leftovers, snapshot and migrate, rebind, balloon, stop`, async () => {
    const root = await Deno.makeTempDir({ prefix: "bcd-node-inst-" });
    const dataDir = `${root}/data`;
    const systemd = new FakeSystemd();
    const helper = await startTestHelper({
      ...(mix.runtimes.includes(LIBVIRT)
        ? {
          libvirt: new LibvirtHost({
            virsh: new FakeVirsh(),
            dataDir: `${root}/root-side`,
            domainType: "qemu",
            owner: "node-a",
            bridges: [],
          }),
        }
        : {}),
      ...(mix.runtimes.includes(CH_RUNTIME)
        ? {
          ch: new ChHost({
            vmmMemory: new CgroupVmmMemory({ cgroupRoot: `${root}/cgroup` }),
            runtimeDir: `${root}/root-side/cloud-hypervisor`,
            volumesDir: `${root}/root-side/volumes`,
            binary: "/usr/bin/cloud-hypervisor",
            bridges: ["br-inst"],
            tapOwner: 1000,
            underHelper: false,
            units: systemd,
            taps: new FakeTaps(),
            fds: new FakeFdSender(systemd),
          }),
        }
        : {}),
    });
    const clock = new FakeClock();
    const asked: SecretQuery[] = [];
    const secrets = {
      fetch: (q: SecretQuery): Promise<SecretAnswer> => {
        asked.push(q);
        return Promise.resolve({ status: "ok", secret: BUNDLE.slice() });
      },
    };
    const { logger } = memoryLogger("warn");
    // The instance wiring reads the config, the data dir, the log and the helper's client; the rest of the daemon's
    // context (journal, identity, session) is not built here.
    const ctx = { config: loadAgentConfig(""), dataDir, log: logger, helper: helper.client } as Partial<
      WiringContext
    > as WiringContext;
    const left = leftovers(dataDir);
    for (const p of Object.values(left)) {
      await Deno.mkdir(p, { recursive: true });
    }
    try {
      const w = await nodeInstances(ctx, {
        secrets,
        holdsCommittedBytes: () => Promise.resolve(0),
        wake: () => {},
      }, { clock });
      try {
        assert.deepEqual([...w.capabilities].sort(), [...mix.capabilities].sort(), "capabilities advertised");
        assert.deepEqual(w.runtimes.map((r) => r.name), mix.runtimes, "the host's runtimes, in order");
        // instance.snapshot: the one runtime's taker, or the router (cloud-hypervisor first) with both; instance.migrate
        // and its phase gauge only with libvirt-kvm.
        assert.equal(w.snapshotter?.constructor.name, SNAPSHOTTER[mix.runtimes.join("+")], "snapshot taker");
        if (w.snapshotter instanceof SnapshotRouter) {
          assert.deepEqual(w.snapshotter.routes.map((r) => r.runtime), [CH_RUNTIME, LIBVIRT]);
        }
        const libvirt = mix.runtimes.includes(LIBVIRT);
        assert.equal(w.migrator !== undefined && w.migrations !== undefined, libvirt, "migrator with libvirt-kvm only");

        // A pass over an empty section: a status report carries volume_storage exactly when a runtime keeps volumes.
        const engine = new ConvergenceEngine({ convergers: [w.converger], log: logger });
        engine.hold({ generation: 1, specHash: "h1", sections: { instances: { instances: [], volumes: [] } } });
        await engine.pass();
        assert.equal(w.converger.listing().volumeStorage !== undefined, mix.runtimes.length > 0, "volume_storage");

        // What a crash left behind is removed for the store (with any runtime) and for each runtime present.
        for (const [owner, p] of Object.entries(left)) {
          const removed = owner === "store" ? mix.runtimes.length > 0 : mix.runtimes.includes(owner);
          assert.equal(await exists(p), !removed, `${owner} leftover ${removed ? "removed" : "kept"}`);
        }

        // A rebind try and a balloon pass reach each runtime (its own verbs, recorded in place).
        const rebinds: string[] = [];
        const reads: string[] = [];
        for (const rt of w.runtimes) {
          rt.rebind = (id) => {
            rebinds.push(`${rt.name}:${id}`);
            return Promise.resolve(true);
          };
          rt.readBalloon = (id) => {
            reads.push(`${rt.name}:${id}`);
            return Promise.resolve({ currentBytes: 1024 ** 3, usedBytes: 512 * 1024 ** 2 });
          };
        }
        const vms = [LIBVIRT, CH_RUNTIME].map((r) => ({ id: `vm-${r}`, runtime: r }));
        if (mix.runtimes.length === 0) {
          assert.equal(w.rebinder, undefined);
          assert.equal(w.balloonLoop, undefined);
        } else {
          const rebinder = w.rebinder!;
          const targets = vms.map((v) => ({ ...v, allocationId: "a1", ref: `ref-${v.runtime}` }));
          await rebinder.consider(targets, new Set(vms.map((v) => v.id)));
          await rebinder.settled();
          assert.deepEqual(rebinds.sort(), mix.runtimes.map((r) => `${r}:vm-${r}`).sort(), "rebind tries");
          for (const rt of mix.runtimes) assert.equal(rebinder.reboundRef(`vm-${rt}`, `ref-${rt}`), `ref-${rt}`);

          assert.ok(w.converger instanceof InstancesConverger, "a host with a runtime has the converger itself");
          w.converger.balloonCandidates = () => vms.map((v) => ({ ...v, memoryBytes: 1024 ** 3 }));
          await clock.advance(BALLOON_INTERVAL_MS);
          await w.balloonLoop!.stop(); // waits for the pass the timer started
          assert.deepEqual(reads.sort(), mix.runtimes.map((r) => `${r}:vm-${r}`).sort(), "balloon reads");
          w.balloonLoop!.start();
        }

        // stop ends the loops: no timer is left on the clock, and no pass runs after it.
        const before = reads.length;
        await w.stop?.();
        assert.equal(clock.pending, 0, "timers left after stop");
        await clock.advance(BALLOON_INTERVAL_MS * 2);
        assert.equal(reads.length, before, "no balloon pass after stop");
      } finally {
        await w.stop?.();
      }
    } finally {
      systemd.killAll();
      await helper.close();
      await Deno.remove(root, { recursive: true });
    }
  });
}
