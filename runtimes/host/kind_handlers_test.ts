import assert from "node:assert/strict";
import { packPayload, unpackResult } from "../../proto/mod.ts";
import { HandlerRegistry } from "../../core/commands/handlers.ts";
import { commandBody } from "../../core/commands/command.ts";
import { LogRing } from "../../core/commands/kind_handlers/mod.ts";
import { kindsForRole } from "../../core/commands/kinds.ts";
import { Journal } from "../../core/journal/mod.ts";
import { silentLogger } from "../../core/log/mod.ts";
import { hostKindHandlers } from "./kind_handlers.ts";
import { makeCerts } from "./certs_testing.ts";

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

const certs = await makeCerts();
if (certs === null) console.warn("skipping the logs.collect upload test: openssl is not installed");

Deno.test({
  name:
    "logs.collect end to end: the real uploader PUTs a tar.gz of the log ring and journal summary that GNU tar reads",
  ignore: certs === null,
  fn: async () => {
    const dir = await Deno.makeTempDir({ dir: "/var/tmp" });
    const journal = await Journal.open({ dataDir: `${dir}/data`, bootId: "b", nodeId: "node-1" });
    let got: Uint8Array = new Uint8Array();
    const srv = Deno.serve(
      { port: 0, hostname: "127.0.0.1", cert: certs!.cert, key: certs!.key, onListen() {} },
      async (req) => {
        got = new Uint8Array(await req.arrayBuffer());
        return new Response(null, { status: 200 });
      },
    );
    try {
      const ring = new LogRing();
      ring.write('{"level":"info","msg":"bcd started"}');
      const registry = new HandlerRegistry();
      for (const h of hostKindHandlers({ journal, logRing: ring, caCerts: [certs!.ca] })) registry.register(h);
      const p = packPayload("logs.collect", { upload_url: `https://127.0.0.1:${srv.addr.port}/bucket/logs.tgz?sig=x` });
      const res = await registry.get("logs.collect")!.run({
        command: commandBody({
          id: "c",
          nodeId: "node-1",
          kind: "logs.collect",
          payload: { typeUrl: p.type_url, value: p.value },
        }),
        signal: new AbortController().signal,
        bootId: "b",
        logger: silentLogger(),
      });
      const r = unpackResult("logs.collect", { type_url: res.result!.typeUrl, value: res.result!.value });
      assert.equal(r.uploaded_bytes, got.length);
      await Deno.writeFile(`${dir}/up.tgz`, got);
      const x = await new Deno.Command("tar", { args: ["-xzf", `${dir}/up.tgz`, "-C", dir] }).output();
      assert.ok(x.success, new TextDecoder().decode(x.stderr));
      assert.equal(await Deno.readTextFile(`${dir}/daemon.log`), '{"level":"info","msg":"bcd started"}\n');
      assert.equal(JSON.parse(await Deno.readTextFile(`${dir}/journal-summary.json`)).meta.nodeId, "node-1");
    } finally {
      await srv.shutdown();
      await journal.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
