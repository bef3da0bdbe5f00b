import assert from "node:assert/strict";
import { memoryLogger } from "../../core/log/mod.ts";
import type { TelemetrySources } from "../../core/telemetry/metrics.ts";
import { BoundedExporter, OtlpTelemetry, PullReader } from "./otlp.ts";
import { serveMetrics } from "./prometheus.ts";
import type { PushMetricExporter, ResourceMetrics } from "@opentelemetry/sdk-metrics";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { decodeOtlpExport, type OtlpExport, OtlpShapeError } from "./otlp_json_testing.ts";

/** What an OTLP/HTTP JSON export says, decoded (`otlp_json_testing.ts`), with the request's headers. */
interface Decoded extends OtlpExport {
  headers: Headers;
}

function decodeExport(body: unknown, headers: Headers): Decoded {
  return { ...decodeOtlpExport(body), headers };
}

/** A loopback OTLP/HTTP receiver; `hang` holds every request until released. */
function receiver() {
  const got: Decoded[] = [];
  let hang: Promise<void> | undefined;
  let release = () => {};
  const waiters: (() => void)[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    if (hang) await hang;
    got.push(decodeExport(await req.json(), req.headers));
    for (const w of waiters.splice(0)) w();
    return new Response("{}", { headers: { "content-type": "application/json" } });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/v1/metrics`,
    got,
    next: () => new Promise<void>((r) => waiters.push(r)),
    hold() {
      hang = new Promise<void>((r) => release = r);
    },
    release() {
      hang = undefined;
      release();
    },
    stop: () => server.shutdown(),
  };
}

function sources(): Omit<TelemetrySources, "dropped"> {
  return {
    settled: () => new Map([["inventory.refresh", new Map([["SUCCEEDED", 3], ["FAILED", 1]])]]),
    lanes: () => [{ lane: "control", queued: 2, running: 4, freeCredits: 2 }],
    sections: () => [{ section: "devices", state: "CONVERGED" }, { section: "telemetry", state: "PROGRESSING" }],
    journal: () => Promise.resolve({ sizeBytes: 4096, unacked: { metric: 1, transition: 2, result: 3 } }),
    holds: () => 2,
    instances: () => [{ state: "RUNNING" }, { state: "RUNNING" }, { state: "STOPPED" }],
    migrations: () => [{ instance: "i-1", gauge: 5 }],
    balloons: () => [{ instance: "i-2", bytes: 536870912 }],
    sessions: () => 3,
  };
}

const value = (d: Decoded, name: string, attrs: Record<string, string> = {}) =>
  d.points.get(name)?.find((p) => Object.entries(attrs).every(([k, v]) => p.attrs[k] === v))?.value;

Deno.test("OTLP/HTTP export: a loopback receiver decodes bcd's metrics, the resource attributes and the headers", async () => {
  const r = receiver();
  const log = memoryLogger("debug");
  const t = new OtlpTelemetry({
    role: "node",
    version: "0.1.0",
    nodeId: "node-7",
    sources: sources(),
    log: log.logger,
  });
  try {
    t.configure(
      {
        endpoint: r.url,
        intervalMs: 60_000,
        resourceAttributes: { "deployment.environment": "test" },
        headersRef: "h",
      },
      { "x-bcd-token": "s3cret" },
    );
    t.recordPass(12);
    t.recordPass(30);
    const arrived = r.next();
    await t.flush();
    await arrived;
    const d = r.got[0]!;
    assert.deepEqual(d.resource, {
      "service.name": "bcd-node",
      "service.version": "0.1.0",
      "bcd.node_id": "node-7",
      "deployment.environment": "test",
    });
    assert.equal(d.headers.get("x-bcd-token"), "s3cret");
    assert.equal(value(d, "bcd.commands.settled", { kind: "inventory.refresh", state: "SUCCEEDED" }), 3);
    assert.equal(value(d, "bcd.commands.settled", { kind: "inventory.refresh", state: "FAILED" }), 1);
    assert.equal(value(d, "bcd.lane.queue_depth", { lane: "control" }), 2);
    assert.equal(value(d, "bcd.lane.credits_free", { lane: "control" }), 2);
    assert.equal(value(d, "bcd.lane.running", { lane: "control" }), 4);
    assert.equal(value(d, "bcd.converge.pass.duration"), 2, "two passes in the histogram");
    assert.equal(value(d, "bcd.section.status", { section: "telemetry", state: "PROGRESSING" }), 1);
    assert.equal(value(d, "bcd.journal.size"), 4096);
    assert.equal(value(d, "bcd.journal.unacked_events", { class: "result" }), 3);
    assert.equal(value(d, "bcd.gpu.holds"), 2);
    assert.equal(value(d, "bcd.instances", { state: "RUNNING" }), 2);
    assert.equal(value(d, "bcd.instance.migration.phase", { instance: "i-1" }), 5);
    assert.equal(value(d, "bcd.instance.memory.balloon.reclaimed", { instance: "i-2" }), 536870912);
    assert.equal(value(d, "bcd.session.reconnects"), 2);
    assert.equal(value(d, "bcd.telemetry.dropped"), 0);
  } finally {
    await t.stop();
    await r.stop();
  }
});

Deno.test("a collector that does not answer: one export in flight, the next dropped at once and counted", () => {
  type Done = Parameters<PushMetricExporter["export"]>[1];
  const pending: Done[] = [];
  const inner: PushMetricExporter = {
    export: (_m, done) => void pending.push(done),
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
  const drops: string[] = [];
  const b = new BoundedExporter(inner, (why) => drops.push(why));
  const results: number[] = [];
  // The exporter passes the metrics through untouched: an empty batch stands for any.
  const rm: ResourceMetrics = { resource: resourceFromAttributes({}), scopeMetrics: [] };
  b.export(rm, (r) => results.push(r.code));
  assert.equal(pending.length, 1, "the first export goes out");
  b.export(rm, (r) => results.push(r.code));
  assert.equal(pending.length, 1, "the second is not queued behind it");
  assert.deepEqual(results, [1], "it is answered failed at once");
  assert.deepEqual(drops, ["an export is still in flight"]);
  pending[0]!({ code: 0 });
  b.export(rm, (r) => results.push(r.code));
  assert.equal(pending.length, 2, "once the first is answered the next goes out");
  pending[1]!({ code: 1 });
  assert.deepEqual(results, [1, 0, 1]);
  assert.equal(drops.length, 2, "a failed export is counted too");
});

Deno.test("the collector gone: the failed export is counted; the local GET /metrics serves Prometheus text", async () => {
  const r = receiver();
  await r.stop(); // nothing listens there any more
  const log = memoryLogger("debug");
  const pull = new PullReader();
  const t = new OtlpTelemetry({
    role: "node",
    version: "0.1.0",
    nodeId: "n",
    sources: sources(),
    log: log.logger,
    pull,
  });
  const m = serveMetrics(pull, 0, log.logger);
  try {
    // A 1 s interval bounds each export to 1 s.
    t.configure({ endpoint: r.url, intervalMs: 1000, resourceAttributes: {}, headersRef: "" }, {});
    await t.flush();
    assert.ok(t.dropped >= 1);
    t.recordPass(5);
    const res = await fetch(`http://127.0.0.1:${m.port}/metrics`);
    assert.equal(res.headers.get("content-type"), "text/plain; version=0.0.4");
    const text = await res.text();
    assert.match(text, /^# TYPE bcd_commands_settled_total counter$/m);
    assert.match(text, /^bcd_commands_settled_total\{kind="inventory\.refresh",state="SUCCEEDED"\} 3$/m);
    assert.match(text, /^bcd_lane_queue_depth\{lane="control"\} 2$/m);
    assert.match(text, /^bcd_instance_migration_phase\{instance="i-1"\} 5$/m);
    assert.match(text, /^bcd_instance_memory_balloon_reclaimed(?:_bytes)?\{instance="i-2"\} 536870912$/m);
    assert.match(text, /^bcd_converge_pass_duration_count 1$/m);
    assert.match(text, /^bcd_telemetry_dropped_total [1-9]\d*$/m);
    assert.equal((await fetch(`http://127.0.0.1:${m.port}/other`)).status, 404);
  } finally {
    await m.stop();
    await t.stop();
  }
});

Deno.test("the tests' OTLP JSON reader: typed points and attributes, and a body of another shape refused with its path", () => {
  const body = {
    resourceMetrics: [{
      resource: { attributes: [{ key: "service.name", value: { stringValue: "bcd-node" } }] },
      scopeMetrics: [{
        metrics: [
          { name: "a", sum: { dataPoints: [{ attributes: [{ key: "k", value: { stringValue: "v" } }], asInt: "7" }] } },
          { name: "b", gauge: { dataPoints: [{ asDouble: 0.5 }] } },
          { name: "c", histogram: { dataPoints: [{ count: "3" }] } },
        ],
      }],
    }],
  };
  const d = decodeOtlpExport(body);
  assert.deepEqual(d.resource, { "service.name": "bcd-node" });
  assert.deepEqual([...d.points], [
    ["a", [{ attrs: { k: "v" }, value: 7 }]],
    ["b", [{ attrs: {}, value: 0.5 }]],
    ["c", [{ attrs: {}, value: 3 }]],
  ]);
  for (
    const [bad, path] of [
      [{}, /^resourceMetrics is not an array$/],
      [{ resourceMetrics: [{ resource: {}, scopeMetrics: [{ metrics: [{ name: 1 }] }] }] }, /metrics\[0\]\.name/],
      [{
        resourceMetrics: [{
          resource: {},
          scopeMetrics: [{ metrics: [{ name: "x", sum: { dataPoints: [{ asInt: "x" }] } }] }],
        }],
      }, /asInt is not a number/],
    ] as const
  ) {
    assert.throws(() => decodeOtlpExport(bad), (e: unknown) => e instanceof OtlpShapeError && path.test(e.message));
  }
});
