import assert from "node:assert/strict";
import { memoryLogger } from "../log/mod.ts";
import { ConditionSet } from "../converge/conditions.ts";
import type { SecretAnswer, SecretQuery } from "../converge/instances/user_data.ts";
import { parseHeaders, TelemetryRefused, type TelemetryTarget, telemetryTarget } from "./section.ts";
import { TelemetryConverger, type TelemetryPort } from "./converger.ts";

Deno.test("the telemetry section, row by row: endpoint, interval, attributes", async (t) => {
  await t.step("no endpoint: no export", () => assert.equal(telemetryTarget({ export_interval_ms: 5000 }), undefined));
  await t.step("https, the default interval and path", () => {
    assert.deepEqual(telemetryTarget({ otlp_endpoint: "https://otel.example:4318", resource_attributes: { a: "b" } }), {
      endpoint: "https://otel.example:4318/v1/metrics",
      intervalMs: 60_000,
      resourceAttributes: { a: "b" },
      headersRef: "",
    });
  });
  await t.step("http only to loopback", () => {
    assert.equal(
      telemetryTarget({ otlp_endpoint: "http://127.0.0.1:4318/v1/metrics" })?.endpoint,
      "http://127.0.0.1:4318/v1/metrics",
    );
    assert.throws(() => telemetryTarget({ otlp_endpoint: "http://otel.example/v1/metrics" }), TelemetryRefused);
  });
  await t.step("an interval outside 1 s to 1 h, too many or too long attributes", () => {
    assert.throws(() => telemetryTarget({ otlp_endpoint: "https://o", export_interval_ms: 500 }), TelemetryRefused);
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, "v"]));
    assert.throws(() => telemetryTarget({ otlp_endpoint: "https://o", resource_attributes: many }), TelemetryRefused);
    assert.throws(
      () => telemetryTarget({ otlp_endpoint: "https://o", resource_attributes: { k: "v".repeat(257) } }),
      TelemetryRefused,
    );
  });
});

Deno.test("headers in OTLP's form: k=v pairs, percent-encoded values; anything else refused", () => {
  const enc = (s: string) => new TextEncoder().encode(s);
  assert.deepEqual(parseHeaders(enc("authorization=Bearer%20abc, x-tenant=t1")), {
    authorization: "Bearer abc",
    "x-tenant": "t1",
  });
  assert.deepEqual(parseHeaders(enc("")), {});
  for (const bad of ["novalue", "=v", "a b=c", "k=%zz", "k=a%0Ab"]) {
    assert.throws(() => parseHeaders(enc(bad)), TelemetryRefused, bad);
  }
  assert.throws(() => parseHeaders(new Uint8Array(17 * 1024)), TelemetryRefused, "bounded before decoding");
});

Deno.test("the telemetry converger: headers from a SecretRequest; refused fails, unavailable waits, none configures", async (t) => {
  const configured: { target: TelemetryTarget | undefined; headers: Record<string, string> }[] = [];
  const port: TelemetryPort & { target: TelemetryTarget | undefined } = {
    target: undefined,
    configure(target, headers) {
      this.target = target;
      configured.push({ target, headers: { ...headers } });
    },
  };
  let answer: SecretAnswer = { status: "ok", secret: new TextEncoder().encode("x-k=v") };
  const asked: SecretQuery[] = [];
  const c = new TelemetryConverger(port, { fetch: (q) => (asked.push(q), Promise.resolve(answer)) });
  const ctx = { generation: 1, conditions: new ConditionSet(), log: memoryLogger("debug").logger };
  const run = async (d: Parameters<typeof c.plan>[0]) => {
    const actions = c.plan(d, await c.observe(ctx));
    return actions.length === 0 ? { kind: "converged" as const } : await c.apply(actions, d, ctx);
  };
  const section = { otlp_endpoint: "https://otel.example", headers_secret_ref: "tenant-7-otel" };
  await t.step("refused headers: FAILED telemetry-headers-refused, nothing configured", async () => {
    answer = { status: "refused", message: "not yours" };
    const o = await run(section);
    assert.deepEqual(o.kind === "failed" && o.reason, "telemetry-headers-refused");
    assert.deepEqual(configured, []);
    assert.deepEqual(asked[0], {
      purpose: "telemetry-headers",
      ref: "tenant-7-otel",
      allocationId: "",
      instanceId: "",
    });
  });
  await t.step("broker unavailable: PROGRESSING", async () => {
    answer = { status: "unavailable", message: "no session" };
    assert.equal((await run(section)).kind, "progressing");
  });
  await t.step("headers come: configured with them; the same section again plans nothing", async () => {
    answer = { status: "ok", secret: new TextEncoder().encode("x-k=v") };
    assert.equal((await run(section)).kind, "converged");
    assert.deepEqual(configured.at(-1)?.headers, { "x-k": "v" });
    const n = asked.length;
    assert.equal((await run(section)).kind, "converged");
    assert.equal(asked.length, n, "no new SecretRequest");
  });
  await t.step("the endpoint removed: export off; an invalid section fails invalid-telemetry", async () => {
    assert.equal((await run(undefined)).kind, "converged");
    assert.equal(configured.at(-1)?.target, undefined);
    const o = await run({ otlp_endpoint: "ftp://x" });
    assert.deepEqual(o.kind === "failed" && o.reason, "invalid-telemetry");
  });
});
