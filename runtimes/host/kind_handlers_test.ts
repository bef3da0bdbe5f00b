import assert from "node:assert/strict";
import { packPayload, unpackResult } from "../../proto/mod.ts";
import { HandlerRegistry } from "../../core/commands/handlers.ts";
import { commandBody } from "../../core/commands/command.ts";
import { LogRing } from "../../core/commands/kind_handlers/mod.ts";
import { kindsForRole } from "../../core/commands/kinds.ts";
import { Journal } from "../../core/journal/mod.ts";
import { silentLogger } from "../../core/log/mod.ts";
import { hostKindHandlers } from "./kind_handlers.ts";

Deno.test("hostKindHandlers() registers node kinds, and inventory.refresh reports this host", async () => {
  const dir = await Deno.makeTempDir({ dir: "/var/tmp" });
  const journal = await Journal.open({ dataDir: dir, bootId: "b" });
  try {
    const registry = new HandlerRegistry();
    for (
      const h of hostKindHandlers({
        journal,
        logRing: new LogRing(),
        rebooter: { reboot: () => Promise.resolve() },
      })
    ) {
      registry.register(h);
    }
    assert.deepEqual(registry.kinds(), ["inventory.refresh", "logs.collect", "node.reboot"]);
    const nodeKinds = kindsForRole("node").map((k) => k.kind);
    for (const k of registry.kinds()) assert.ok(nodeKinds.includes(k), k);
    const p = packPayload("inventory.refresh", {});
    const res = await registry.get("inventory.refresh")!.run({
      command: commandBody({
        id: "c",
        nodeId: "n",
        kind: "inventory.refresh",
        payload: { typeUrl: p.type_url, value: p.value },
      }),
      signal: new AbortController().signal,
      bootId: "b",
      logger: silentLogger(),
    });
    const inv = unpackResult("inventory.refresh", { type_url: res.result!.typeUrl, value: res.result!.value })
      .inventory!;
    assert.equal(inv.cpu?.threads, navigator.hardwareConcurrency);
    assert.equal(inv.boot_id, (await Deno.readTextFile("/proc/sys/kernel/random/boot_id")).trim());
  } finally {
    await journal.close();
    await Deno.remove(dir, { recursive: true });
  }
});
