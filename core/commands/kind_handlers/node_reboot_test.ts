import assert from "node:assert/strict";
import { packPayload, unpackResult } from "../../../proto/mod.ts";
import { Journal } from "../../journal/mod.ts";
import { commandBody } from "../command.ts";
import { NOW, plainDispatcher } from "../harness_testing.ts";
import { HandlerRegistry } from "../handlers.ts";
import type { CommandUpdate } from "../results.ts";
import { nodeRebootHandler } from "./node_reboot.ts";
import { FakeClock } from "../../../fixtures/clock/fake_clock.ts";

function reboot(id: string) {
  const p = packPayload("node.reboot", { reason: "XID 79" });
  return {
    bodyBytes: new Uint8Array([1]),
    attempt: 1,
    body: commandBody({
      id,
      nodeId: "node-1",
      kind: "node.reboot",
      notAfterMs: NOW + 60_000,
      payload: { typeUrl: p.type_url, value: p.value },
    }),
  };
}

Deno.test("node.reboot journals running{boot_id} before the rebooter is asked, and the next boot reports SUCCEEDED rebooted", async () => {
  const dir = await Deno.makeTempDir({ dir: "/var/tmp" });
  try {
    const journal = await Journal.open({ dataDir: dir, bootId: "boot-1", clock: new FakeClock(NOW) });
    const seen: string[] = [];
    let stateAtReboot = "";
    let rebooted!: () => void;
    const asked = new Promise<void>((r) => rebooted = r);
    const registry = new HandlerRegistry().register(nodeRebootHandler({
      rebooter: {
        reboot: async (reason) => {
          stateAtReboot = (await journal.get("01REBOOT"))?.state ?? "none";
          seen.push(reason);
          rebooted();
        },
      },
      sleep: () => new Promise<void>(() => {}), // the process "dies" here: the handler never returns
    }));
    const updates: CommandUpdate[] = [];
    const d = plainDispatcher({ journal, registry, updates });
    await d.deliver(reboot("01REBOOT"));
    await asked; // the journal's state as the rebooter read it when it was asked
    assert.deepEqual(seen, ["XID 79"]);
    assert.equal(stateAtReboot, "running");
    assert.deepEqual(updates.map((u) => u.state), ["ACKED", "RUNNING"]);
    // The machine goes down: the process never finishes the command (its dispatcher is abandoned, not stopped).
    await journal.close();

    const after = await Journal.open({ dataDir: dir, bootId: "boot-2", clock: new FakeClock(NOW) });
    try {
      await after.recover();
      const updates2: CommandUpdate[] = [];
      const d2 = plainDispatcher({
        journal: after,
        registry: new HandlerRegistry(),
        updates: updates2,
        bootId: "boot-2",
      });
      const [u] = await d2.unackedResults();
      assert.equal(u?.state, "SUCCEEDED");
      assert.equal(u?.bootId, "boot-2");
      const r = unpackResult("node.reboot", { type_url: u!.result!.typeUrl, value: u!.result!.value });
      assert.deepEqual([r.rebooted, r.previous_boot_id], [true, "boot-1"]);
      await d2.deliver(reboot("01REBOOT"));
      assert.deepEqual(
        updates2.map((x) => x.state),
        ["SUCCEEDED"],
        "a redelivery resends the result, no second reboot",
      );
      await d2.stop();
    } finally {
      await after.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("node.reboot fails reboot-failed when the init system refuses, or when the machine does not go down", async (t) => {
  for (
    const [name, rebootFn] of [
      ["refused", () => Promise.reject(new Error("systemctl: exit 1; reboot: not found"))],
      ["never went down", () => Promise.resolve()],
    ] as const
  ) {
    await t.step(name, async () => {
      const dir = await Deno.makeTempDir({ dir: "/var/tmp" });
      const journal = await Journal.open({ dataDir: dir, bootId: "boot-1", clock: new FakeClock(NOW) });
      const registry = new HandlerRegistry().register(
        nodeRebootHandler({ rebooter: { reboot: rebootFn }, sleep: () => Promise.resolve() }),
      );
      const updates: CommandUpdate[] = [];
      const d = plainDispatcher({ journal, registry, updates });
      await d.deliver(reboot("01R"));
      await d.settled();
      const last = updates.at(-1)!;
      assert.equal(`${last.state}:${last.errorCode}`, "FAILED:reboot-failed");
      await d.stop();
      await journal.close();
      await Deno.remove(dir, { recursive: true });
    });
  }
});
