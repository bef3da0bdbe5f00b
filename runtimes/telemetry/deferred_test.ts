import assert from "node:assert/strict";
import { silentLogger } from "../../core/log/mod.ts";
import type { TelemetrySources } from "../../core/telemetry/metrics.ts";
import { DeferredTelemetry } from "./deferred.ts";
import { decodeOtlpExport, type OtlpExport } from "./otlp_json_testing.ts";

const sources: Omit<TelemetrySources, "dropped"> = {
  settled: () => new Map(),
  lanes: () => [],
  sections: () => [],
  journal: () => Promise.resolve({ sizeBytes: 1, unacked: { metric: 0, transition: 0, result: 0 } }),
  holds: () => 0,
  sessions: () => 1,
};

const options = { role: "node", version: "0.1.0", nodeId: "node-9", sources, log: silentLogger() };

Deno.test("the deferred telemetry port loads no SDK while nothing is exported, and records nothing then", async () => {
  const t = await DeferredTelemetry.create(options);
  t.recordPass(5);
  await t.configure(undefined, {});
  assert.equal(t.loaded, false, "turning an export off that never ran loads nothing");
  assert.equal(t.target, undefined);
  assert.equal(t.dropped, 0);
  await t.flush();
  await t.stop();
  assert.equal(t.loaded, false);
});

Deno.test("the deferred telemetry port loads the SDK on the first target and exports through it", async () => {
  const got: OtlpExport[] = [];
  let arrived = () => {};
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    got.push(decodeOtlpExport(await req.json()));
    arrived();
    return new Response("{}", { headers: { "content-type": "application/json" } });
  });
  const t = await DeferredTelemetry.create(options);
  try {
    const target = {
      endpoint: `http://127.0.0.1:${server.addr.port}/v1/metrics`,
      intervalMs: 60_000,
      resourceAttributes: {},
      headersRef: "",
    };
    await t.configure(target, {});
    assert.equal(t.loaded, true);
    assert.deepEqual(t.target, target);
    t.recordPass(7);
    const exported = new Promise<void>((r) => arrived = r);
    await t.flush();
    await exported;
    assert.equal(got[0]!.resource["bcd.node_id"], "node-9");
    assert.equal(got[0]!.points.get("bcd.converge.pass.duration")?.[0]?.value, 1, "the pass after loading counted");
    await t.configure(undefined, {});
    assert.equal(t.target, undefined, "an empty endpoint turns the loaded export off");
  } finally {
    await t.stop();
    await server.shutdown();
  }
});
