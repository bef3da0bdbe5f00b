import assert from "node:assert/strict";
import { probeOrphan, probeZombies } from "./process_probes.ts";

Deno.test("zombies reports the count and the IDs of the processes /proc shows in state Z", async () => {
  const facts = new Map(await probeZombies());
  const pids = facts.get("pids")!;
  assert.equal(facts.get("count"), String(pids === "" ? 0 : pids.split(" ").length));
});

Deno.test({
  name: "orphan leaves a process that exits once reparented, and reports whether its new parent collected it",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const facts = new Map(await probeOrphan(20_000));
    assert.match(facts.get("pid")!, /^[1-9]\d*$/);
    // Outside a VM its new parent is this host's init or a subreaper: either collects it or leaves a zombie; it
    // never runs on (it exits once reparented). In a VM, test:vm-layered requires `collected`.
    assert.notEqual(facts.get("end"), "running");
  },
});
