import assert from "node:assert/strict";
import { silentLogger } from "../../core/log/mod.ts";
import { DevicesMemory } from "../../core/converge/devices/apply.ts";
import { DevicesConverger } from "../../core/converge/devices/converger.ts";
import {
  MemoryEventSink,
  MemorySliceManager,
  StaticGpuTool,
  StaticHostMemory,
} from "../../core/converge/devices/fakes.ts";
import { sampleInventory, sampleUuid } from "../../core/converge/devices/inventory_testing.ts";
import { atomicWrite } from "./atomic_write.ts";
import { CdiHoldStore } from "./hold_store.ts";
import { HOLD_RECORDS } from "./records_testing.ts";
import { assertValidCdiSpec } from "../../fixtures/cdi/schema_check.ts";
import { envFileText } from "./spec.ts";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";

async function withRoot(f: (root: string, store: CdiHoldStore) => Promise<void>) {
  const root = await Deno.makeTempDir({ prefix: "bcd-cdi-" });
  try {
    await f(root, new CdiHoldStore({ cdiDir: `${root}/etc/cdi`, envDir: `${root}/run/bcd/allocations` }));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

const names = async (dir: string) => {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) out.push(e.name);
  return out.sort();
};

Deno.test("CdiHoldStore writes /etc/cdi/bcd-<id>.json and /run/bcd/allocations/<id>.env and reads the holds back", async () => {
  await withRoot(async (root, store) => {
    for (const r of Object.values(HOLD_RECORDS)) await store.write(r);
    assert.deepEqual(await names(`${root}/etc/cdi`), ["bcd-a1.json", "bcd-k.json", "bcd-m-2.json"]);
    assert.deepEqual(await names(`${root}/run/bcd/allocations`), ["a1.env", "k.env", "m-2.env"]);
    for (const r of Object.values(HOLD_RECORDS)) {
      const spec = JSON.parse(await Deno.readTextFile(store.specPath(r.allocationId)));
      assertValidCdiSpec(spec);
      assert.equal(await Deno.readTextFile(store.envPath(r.allocationId)), envFileText(r.env));
    }
    assert.equal((await Deno.stat(store.specPath("a1"))).mode! & 0o777, 0o644);
    assert.equal((await Deno.stat(store.envPath("a1"))).mode! & 0o777, 0o640);
    const l = await store.list();
    assert.deepEqual(l.holds.map((h) => h.allocationId), ["a1", "k", "m-2"]);
    assert.deepEqual(l.envFiles, ["a1", "k", "m-2"]);
    assert.deepEqual(l.unreadable, []);
    assert.deepEqual(l.holds.find((h) => h.allocationId === "k")!.binding, "kubernetes");
  });
});

Deno.test("CdiHoldStore ignores other vendors' specs and reports its own unreadable ones", async () => {
  await withRoot(async (root, store) => {
    await Deno.mkdir(`${root}/etc/cdi`, { recursive: true });
    await Deno.writeTextFile(`${root}/etc/cdi/nvidia.yaml`, "cdiVersion: 0.5.0\n");
    await Deno.writeTextFile(`${root}/etc/cdi/other.json`, "{}");
    await Deno.writeTextFile(`${root}/etc/cdi/bcd-broken.json`, "{ truncated");
    await Deno.writeTextFile(`${root}/etc/cdi/bcd-..json`, "{}"); // not a usable allocation id: not ours to read
    const l = await store.list();
    assert.deepEqual(l.holds, []);
    assert.deepEqual(l.unreadable.map((u) => u.allocationId), ["broken"]);
    await store.remove("broken");
    assert.deepEqual(await names(`${root}/etc/cdi`), ["bcd-..json", "nvidia.yaml", "other.json"]);
  });
});

Deno.test("CdiHoldStore removes spec and env, tolerates absent files, and refuses ids that are not file names", async () => {
  await withRoot(async (root, store) => {
    await store.write(HOLD_RECORDS["a whole-GPU hold"]!);
    await store.remove("a1");
    await store.remove("a1");
    await store.removeEnv("nothing");
    assert.deepEqual(await names(`${root}/etc/cdi`), []);
    assert.deepEqual(await names(`${root}/run/bcd/allocations`), []);
    assert.throws(() => store.specPath("../../etc/passwd"), RangeError);
  });
});

Deno.test("atomicWrite replaces a file whole and leaves no temp file behind", async () => {
  await withRoot(async (root) => {
    const p = `${root}/d/f.json`;
    await atomicWrite(p, "one");
    await atomicWrite(p, "two", 0o600);
    assert.equal(await Deno.readTextFile(p), "two");
    assert.equal((await Deno.stat(p)).mode! & 0o777, 0o600);
    assert.deepEqual(await names(`${root}/d`), ["f.json"]);
  });
});

Deno.test("the devices converger over CdiHoldStore: a 2-GPU hold binds, every spec validates, a release removes it", async () => {
  await withRoot(async (root, store) => {
    const events = new MemoryEventSink();
    const conv = new DevicesConverger({
      gpu: new StaticGpuTool(sampleInventory()),
      holds: store,
      slices: new MemorySliceManager(),
      hostMemory: new StaticHostMemory({ memTotalBytes: 2 ** 36, hugetlbBytes: 0 }),
      events,
      memory: new DevicesMemory(),
      dirExists: () => Promise.resolve(true),
    });
    const ctx = { generation: 1, log: silentLogger() };
    const [g0, g1, g2] = [0, 1, 2].map(sampleUuid);
    const section = {
      assignments: [
        {
          allocation_id: "two",
          reservation_id: "r",
          binding: "BINDING_HOLD",
          devices: [{ class: "gpu", id: g0! }, { class: "gpu", id: g2! }],
        },
        {
          allocation_id: "mig",
          reservation_id: "r2",
          binding: "BINDING_HOLD",
          devices: [{ class: "gpu.mig", id: `${g1}/gi1/ci0` }],
          limits: { cpu_millis: 500 },
        },
      ],
    };
    const out = await conv.apply(conv.plan(section, await conv.observe(ctx)), section, ctx);
    assert.deepEqual(out, { kind: "converged" });
    for (const n of await names(`${root}/etc/cdi`)) {
      assertValidCdiSpec(JSON.parse(await Deno.readTextFile(`${root}/etc/cdi/${n}`)));
    }
    assert.deepEqual(conv.plan(section, await conv.observe(ctx)), [], "read back from /etc/cdi, nothing left to do");
    const ctx2 = { generation: 2, log: silentLogger() };
    await conv.apply(conv.plan({ assignments: [] }, await conv.observe(ctx2)), undefined, ctx2);
    assert.deepEqual(await names(`${root}/etc/cdi`), []);
    assert.deepEqual(await names(`${root}/run/bcd/allocations`), []);
    assert.deepEqual(events.events.map((e) => e.type), [
      "AllocationBound",
      "AllocationBound",
      "AllocationReleased",
      "AllocationReleased",
    ]);
  });
});

Deno.test("CdiHoldStore sweeps temp files a crashed write left, once they are stale, and never a fresh one", async () => {
  const root = await Deno.makeTempDir({ prefix: "bcd-cdi-" });
  try {
    const clock = new FakeClock(Date.now());
    const store = new CdiHoldStore({ cdiDir: `${root}/cdi`, envDir: `${root}/env`, clock });
    await Deno.mkdir(`${root}/cdi`);
    await Deno.mkdir(`${root}/env`);
    const tmp = ".bcd-a1.json.tmp-0f8e6a52-1c2d-4e3f-8a9b-0c1d2e3f4a5b";
    const envTmp = ".a1.env.tmp-0f8e6a52-1c2d-4e3f-8a9b-0c1d2e3f4a5b";
    await Deno.writeTextFile(`${root}/cdi/${tmp}`, "{");
    await Deno.writeTextFile(`${root}/env/${envTmp}`, "A=");
    await Deno.writeTextFile(`${root}/cdi/.other.tmp`, "not ours");
    await store.list();
    assert.deepEqual(await names(`${root}/cdi`), [
      ".bcd-a1.json.tmp-0f8e6a52-1c2d-4e3f-8a9b-0c1d2e3f4a5b",
      ".other.tmp",
    ]);
    await clock.advance(11 * 60_000);
    await store.list();
    assert.deepEqual(await names(`${root}/cdi`), [".other.tmp"]);
    assert.deepEqual(await names(`${root}/env`), []);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("CdiHoldStore reads a spec again whenever it changes on disk, and forgets one that is gone", async () => {
  await withRoot(async (_root, store) => {
    const r = Object.values(HOLD_RECORDS).find((x) => x.devices.length > 1)!;
    await store.write(r);
    const first = (await store.list()).holds.find((h) => h.allocationId === r.allocationId);
    assert.ok(first && first.devices.length > 1);
    // An operator edits the spec in place (same inode): a different annotation must show on the next pass.
    const path = store.specPath(r.allocationId);
    const spec = JSON.parse(await Deno.readTextFile(path));
    spec.devices = spec.devices.slice(0, 1);
    await Deno.writeTextFile(path, JSON.stringify(spec, null, 2));
    const edited = (await store.list()).holds.find((h) => h.allocationId === r.allocationId);
    assert.equal(edited?.devices.length, 1);
    // Corrupted in place: reported unreadable, not served from the earlier parse.
    await Deno.writeTextFile(path, "{ not json");
    const listing = await store.list();
    assert.ok(!listing.holds.some((h) => h.allocationId === r.allocationId));
    assert.deepEqual(listing.unreadable.map((u) => u.allocationId), [r.allocationId]);
    await Deno.remove(path);
    const gone = await store.list();
    assert.equal(gone.holds.length + gone.unreadable.length, 0);
  });
});

Deno.test("a spec swapped for a link after the listing is not followed: it is reported unreadable, naming why", async () => {
  const root = await Deno.makeTempDir({ prefix: "bcd-holds-swap-" });
  try {
    const cdiDir = `${root}/cdi`;
    const rec = HOLD_RECORDS["a whole-GPU hold"]!;
    const writer = new CdiHoldStore({ cdiDir, envDir: `${root}/env` });
    await writer.write(rec);
    // What the link points at: a spec-shaped file elsewhere (a secret, in an attack), and the swap in the window
    // between the directory's listing and the read.
    const outside = `${root}/outside.json`;
    await Deno.copyFile(`${cdiDir}/bcd-a1.json`, outside);
    const swapped = new CdiHoldStore({
      cdiDir,
      envDir: `${root}/env`,
      afterListing: async () => {
        await Deno.remove(`${cdiDir}/bcd-a1.json`);
        await Deno.symlink(outside, `${cdiDir}/bcd-a1.json`);
      },
    });
    const listing = await swapped.list();
    assert.deepEqual(listing.holds, [], "nothing was read through the link");
    assert.equal(listing.unreadable.length, 1);
    assert.match(listing.unreadable[0]!.problem, /not a regular file \(a link\)/);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a spec replaced by another file between its lstat and its open is not read", async () => {
  const root = await Deno.makeTempDir({ prefix: "bcd-holds-swap-" });
  try {
    const cdiDir = `${root}/cdi`;
    const rec = HOLD_RECORDS["a whole-GPU hold"]!;
    await new CdiHoldStore({ cdiDir, envDir: `${root}/env` }).write(rec);
    const path = `${cdiDir}/bcd-a1.json`;
    const text = await Deno.readTextFile(path);
    // A store that opens what it lstat'ed: the swap happens after the lstat, through a racing rename.
    const origOpen = Deno.open;
    let swapped = false;
    (Deno as { open: typeof Deno.open }).open = async (p, o) => {
      if (!swapped && String(p) === path) {
        swapped = true;
        await Deno.writeTextFile(`${root}/other.json`, text);
        await Deno.rename(`${root}/other.json`, path);
      }
      return await origOpen(p, o);
    };
    try {
      const listing = await new CdiHoldStore({ cdiDir, envDir: `${root}/env` }).list();
      assert.deepEqual(listing.holds, []);
      assert.match(listing.unreadable[0]!.problem, /replaced after it was listed/);
    } finally {
      (Deno as { open: typeof Deno.open }).open = origOpen;
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
