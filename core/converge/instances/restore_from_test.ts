import assert from "node:assert/strict";
import { silentLogger } from "../../log/mod.ts";
import { ConvergenceEngine } from "../engine.ts";
import { InstancesConverger } from "./converger.ts";
import { MemoryRuntime } from "./fake_runtime.ts";
import type { SnapshotFetcher, SnapshotFetchState, SnapshotSource } from "./snapshot_source.ts";

const SHA = "d".repeat(64);

/** A fetcher whose answer the test sets; records polls and prunes. */
class StubFetcher implements SnapshotFetcher {
  answer: SnapshotFetchState = { state: "downloading" };
  readonly polled: string[] = [];
  readonly kept: string[][] = [];
  poll(src: SnapshotSource): SnapshotFetchState {
    this.polled.push(src.sha256);
    return this.answer;
  }
  prune(keep: ReadonlySet<string>): Promise<string[]> {
    this.kept.push([...keep]);
    return Promise.resolve([]);
  }
}

function spec(restore: Record<string, unknown>) {
  return {
    instances: [{
      id: "r-1",
      runtime: "libvirt-kvm",
      state: 1,
      vcpus: 1,
      memory_bytes: 2 ** 30,
      restore_from: { url: `https://snap.example/${SHA}`, sha256: SHA, runtime: "libvirt-kvm", ...restore },
    }],
  };
}

async function pass(fetcher: StubFetcher | undefined, restore: Record<string, unknown>) {
  const rt = new MemoryRuntime("libvirt-kvm");
  const conv = new InstancesConverger([rt], fetcher ? { snapshots: fetcher } : {});
  const engine = new ConvergenceEngine({ convergers: [conv], log: silentLogger() });
  engine.hold({ generation: 1, specHash: "h", sections: { instances: spec(restore) } });
  const s = await engine.pass();
  return { rt, conv, sec: s.sections.find((x) => x.section === "instances")!, report: conv.report() };
}

Deno.test("restore_from: a ref that is not https, has no digest, or names another runtime fails the instance before any download", async (t) => {
  const rows: Array<[string, Record<string, unknown>, RegExp]> = [
    ["an http:// URL", { url: `http://snap.example/${SHA}` }, /not-https: restore_from URL .* is not https/],
    ["a missing digest", { sha256: "" }, /bad-digest/],
    ["another runtime's snapshot", { runtime: "cloud-hypervisor" }, /snapshot-runtime: .*cloud-hypervisor/],
  ];
  for (const [what, restore, msg] of rows) {
    await t.step(what, async () => {
      const f = new StubFetcher();
      const { sec, report, rt } = await pass(f, restore);
      assert.equal(sec.state, "FAILED");
      assert.equal(sec.reason, "InstanceFailed");
      assert.match(report.find((r) => r.id === "r-1")!.message, msg);
      assert.deepEqual(f.polled, [], "nothing was downloaded");
      assert.deepEqual(rt.calls, []);
    });
  }
});

Deno.test("restore_from: the instance waits PROGRESSING while the snapshot downloads, and is defined from it once it is ready", async (t) => {
  const f = new StubFetcher();
  const rt = new MemoryRuntime("libvirt-kvm");
  const conv = new InstancesConverger([rt], { snapshots: f });
  const engine = new ConvergenceEngine({ convergers: [conv], log: silentLogger() });
  engine.hold({
    generation: 1,
    specHash: "h",
    sections: { instances: spec({ include_memory: true, cpu_model: "M" }) },
  });
  await t.step("downloading: PROGRESSING, reported waiting for the user data or snapshot", async () => {
    const s = await engine.pass();
    const sec = s.sections.find((x) => x.section === "instances")!;
    assert.equal(sec.state, "PROGRESSING");
    const r = conv.report().find((x) => x.id === "r-1")!;
    assert.equal(r.state, "PENDING");
    assert.match(r.message, /^waiting for the user data or snapshot: snapshot d{64} downloading$/);
    assert.deepEqual(rt.calls, []);
  });
  await t.step("a network failure keeps it waiting, saying a minute", async () => {
    f.answer = { state: "failed", reason: "download-stalled", message: "1 bytes moved", terminal: false };
    const s = await engine.pass();
    assert.equal(s.sections.find((x) => x.section === "instances")!.state, "PROGRESSING");
    assert.match(conv.report()[0]!.message, /download failed \(1 bytes moved\); tried again in a minute/);
  });
  await t.step("ready: defined with the ref in its launch spec, then started; the download is kept", async () => {
    f.answer = { state: "ready" };
    const s = await engine.pass();
    assert.equal(s.sections.find((x) => x.section === "instances")!.state, "CONVERGED");
    assert.deepEqual(rt.calls, ["define r-1", "start r-1"]);
    const rec = rt.domains.get("r-1")!.record!;
    assert.deepEqual(rec.launch?.restoreFrom, {
      url: `https://snap.example/${SHA}`,
      sha256: SHA,
      runtime: "libvirt-kvm",
      includeMemory: true,
      cpuModel: "M",
      sizeBytes: 0,
    });
    assert.deepEqual(f.kept.at(-1), [SHA]);
  });
  await t.step("dropped from the spec: the instance goes and so does its download", async () => {
    engine.hold({ generation: 2, specHash: "h2", sections: { instances: { instances: [] } } });
    await engine.pass();
    assert.deepEqual(f.kept.at(-1), []);
    assert.equal(rt.domains.has("r-1"), false);
  });
});

Deno.test("restore_from: a digest mismatch fails the instance; a host without snapshot downloads fails it too", async () => {
  const f = new StubFetcher();
  f.answer = { state: "failed", reason: "digest-mismatch", message: "snapshot has SHA-256 e…, not d…", terminal: true };
  const a = await pass(f, {});
  assert.equal(a.sec.state, "FAILED");
  assert.match(a.report[0]!.message, /^digest-mismatch: /);
  const b = await pass(undefined, {});
  assert.equal(b.sec.state, "FAILED");
  assert.match(b.report[0]!.message, /snapshot-unsupported: this host restores no snapshots/);
});
