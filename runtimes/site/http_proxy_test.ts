/**
 * `site.httpProxy`'s guards row by row (000 §Signed commands and attested results), over a real loopback target server,
 * a fake resolver, a real `bmc-hosts.json` and a site spec's proxy targets: each refused row is `forbidden-target`
 * (or its own reason) and reaches nothing; each admitted row reaches the target at the checked address.
 */
import assert from "node:assert/strict";
import { CommandFailed, InvalidPayload } from "../../core/commands/rejection.ts";
import { packPayload, unpackResult } from "../../proto/mod.ts";
import type { bcd } from "../../proto/mod.ts";
import { BmcHostBook } from "../redfish/bmc_hosts.ts";
import { bmcContext } from "../redfish/redfish_testing.ts";
import { siteHttpProxyHandler } from "./http_proxy.ts";
import { parseBmcNetworks, proxySubject } from "./proxy_guard.ts";

interface Seen {
  method: string;
  path: string;
  host: string;
  body: string;
}

const seen: Seen[] = [];
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
  const u = new URL(req.url);
  seen.push({ method: req.method, path: u.pathname, host: req.headers.get("host") ?? "", body: await req.text() });
  return new Response(u.pathname === "/big" ? "x".repeat(100) : `hello ${req.method} ${u.pathname}`, {
    headers: { "X-Target": "agentless" },
  });
});
const PORT = server.addr.port;

const DNS: Record<string, string[]> = {
  "agentless-1.site": ["127.0.0.1"],
  "agentless-2.site": ["127.0.0.1", "10.1.0.99"],
  "machine-1.site": ["10.0.0.5"],
  "bmc-2.site": ["10.0.0.6"],
  "nohost.site": [],
};
const TARGETS: bcd.v1.ProxyTarget.$Properties[] = [
  { node_id: "n-a", addresses: ["127.0.0.1"], names: ["agentless-1.site", "agentless-2.site"] },
  { node_id: "n-b", addresses: ["10.1.0.7"], names: [] },
];

async function handler(o: { targets?: bcd.v1.ProxyTarget.$Properties[]; quorum?: boolean } = {}) {
  const dir = await Deno.makeTempDir({ prefix: "bcd-proxy-" });
  const book = new BmcHostBook(dir);
  await book.record("bmc-1.site", 443, "bmc.query");
  await book.record("10.0.0.5", 443, "bmc.power");
  await book.record("bmc-2.site", 443, "bmc.boot");
  const resolved: string[] = [];
  const h = siteHttpProxyHandler({
    bmcHosts: book,
    resolve: (name) => {
      resolved.push(name);
      return Promise.resolve(DNS[name] ?? []);
    },
    bmcNetworks: parseBmcNetworks(["10.20.0.0/16", "fd00:b3c::/48"]),
    proxyTargets: () => o.targets ?? TARGETS,
    quorumEnforced: () => o.quorum ?? false,
  });
  return { h, resolved, cleanup: () => Deno.remove(dir, { recursive: true }) };
}

function ctxOf(p: Partial<bcd.v1.SiteHttpProxyPayload.$Properties>, batchId = "") {
  const { ctx } = bmcContext("site.httpProxy", { target_node_id: "n-a", method: "GET", ...p });
  return { ...ctx, command: { ...ctx.command, batchId } };
}

async function outcome(h: Awaited<ReturnType<typeof handler>>["h"], ctx: ReturnType<typeof ctxOf>) {
  try {
    h.resources!(ctx.command);
    const out = await h.run(ctx);
    return {
      code: "ok",
      result: unpackResult("site.httpProxy", { type_url: out.result!.typeUrl, value: out.result!.value }),
    };
  } catch (e) {
    if (e instanceof CommandFailed || e instanceof InvalidPayload) return { code: e.code, message: e.message };
    throw e;
  }
}

Deno.test("site.httpProxy refuses every guard row forbidden-target and reaches nothing; admitted rows reach the checked address", async (t) => {
  const u = (host: string, path = "/status") => `http://${host}:${PORT}${path}`;
  const rows: {
    name: string;
    p: Partial<bcd.v1.SiteHttpProxyPayload.$Properties>;
    batch?: string;
    quorum?: boolean;
    code: string;
    why?: RegExp;
  }[] = [
    { name: "GET to a listed address", p: { url: u("127.0.0.1") }, code: "ok" },
    { name: "GET by a listed name, sent to its checked address", p: { url: u("agentless-1.site") }, code: "ok" },
    {
      name: "a /redfish path",
      p: { url: u("127.0.0.1", "/redfish/v1/Systems") },
      code: "forbidden-target",
      why: /Redfish path/,
    },
    {
      name: "/redfish percent-encoded",
      p: { url: u("127.0.0.1", "/%72edfish/v1") },
      code: "forbidden-target",
      why: /Redfish path/,
    },
    {
      name: "/REDFISH after doubled slashes",
      p: { url: u("127.0.0.1", "//REDFISH/v1") },
      code: "forbidden-target",
      why: /Redfish path/,
    },
    {
      name: "/redfish reached through ..",
      p: { url: u("127.0.0.1", "/a/../redfish") },
      code: "forbidden-target",
      why: /Redfish path/,
    },
    { name: "a BMC host by name", p: { url: u("bmc-1.site") }, code: "forbidden-target", why: /bmc-1.site is a BMC/ },
    {
      name: "a BMC host by name, another spelling",
      p: { url: u("BMC-1.Site.") },
      code: "forbidden-target",
      why: /is a BMC/,
    },
    {
      name: "a name resolving to a BMC's address",
      p: { url: u("machine-1.site") },
      code: "forbidden-target",
      why: /10.0.0.5, the address of the BMC 10.0.0.5/,
    },
    {
      name: "the address a BMC's name resolves to",
      p: { url: u("10.0.0.6") },
      code: "forbidden-target",
      why: /the address of the BMC bmc-2.site/,
    },
    {
      name: "a BMC address as IPv4-mapped IPv6",
      p: { url: u("[::ffff:10.0.0.5]") },
      code: "forbidden-target",
      why: /BMC/,
    },
    {
      name: "an address in bmc_networks (IPv4)",
      p: { url: u("10.20.3.4") },
      code: "forbidden-target",
      why: /bmc_networks 10.20.0.0\/16/,
    },
    {
      name: "an address in bmc_networks (IPv6)",
      p: { url: u("[fd00:b3c::9]") },
      code: "forbidden-target",
      why: /bmc_networks/,
    },
    {
      name: "an address of another node",
      p: { url: u("10.1.0.7") },
      code: "forbidden-target",
      why: /not an address of node n-a/,
    },
    {
      name: "a node without proxy targets",
      p: { url: u("127.0.0.1"), target_node_id: "n-z" },
      code: "forbidden-target",
      why: /not among the site's proxy targets/,
    },
    {
      name: "a listed name is not enough for another node",
      p: { url: u("agentless-1.site"), target_node_id: "n-b" },
      code: "forbidden-target",
      why: /not an address of node n-b/,
    },
    {
      name: "a name resolving also outside the node",
      p: { url: u("agentless-2.site"), target_node_id: "n-b" },
      code: "forbidden-target",
      why: /not an address of node n-b/,
    },
    { name: "a name that resolves to nothing", p: { url: u("nohost.site") }, code: "proxy-unresolved" },
    {
      name: "a POST without a batch",
      p: { url: u("127.0.0.1", "/reset"), method: "POST", body: new TextEncoder().encode("{}") },
      code: "forbidden-target",
      why: /no batch/,
    },
    {
      name: "a POST with a batch but the quorum off",
      p: { url: u("127.0.0.1", "/reset"), method: "POST" },
      batch: "b-1",
      code: "forbidden-target",
      why: /quorum is off/,
    },
    {
      name: "a DELETE unbatched under the quorum",
      p: { url: u("127.0.0.1", "/x"), method: "DELETE" },
      quorum: true,
      code: "forbidden-target",
      why: /no batch/,
    },
    {
      name: "a POST with its batch leaf under the quorum",
      p: { url: u("127.0.0.1", "/reset"), method: "POST", body: new TextEncoder().encode("go") },
      batch: "b-1",
      quorum: true,
      code: "ok",
    },
    { name: "a method outside the list", p: { url: u("127.0.0.1"), method: "TRACE" }, code: "invalid-payload" },
    { name: "a scheme other than http(s)", p: { url: "ftp://127.0.0.1/x" }, code: "invalid-payload" },
    { name: "credentials in the URL", p: { url: `http://u:p@127.0.0.1:${PORT}/` }, code: "invalid-payload" },
    {
      name: "a Host header",
      p: { url: u("127.0.0.1"), headers: [{ name: "Host", value: "bmc-1.site" }] },
      code: "invalid-payload",
    },
    {
      name: "a header value with a line break",
      p: { url: u("127.0.0.1"), headers: [{ name: "X-A", value: "a\r\nHost: x" }] },
      code: "invalid-payload",
    },
    { name: "a GET with a body", p: { url: u("127.0.0.1"), body: new Uint8Array([1]) }, code: "invalid-payload" },
  ];
  for (const row of rows) {
    await t.step(row.name, async () => {
      const { h, cleanup } = await handler({ quorum: row.quorum ?? false });
      const before = seen.length;
      const r = await outcome(h, ctxOf(row.p, row.batch ?? ""));
      await cleanup();
      assert.equal(r.code, row.code, r.message ?? "");
      if (row.why) assert.match(r.message ?? "", row.why);
      if (row.code !== "ok") assert.equal(seen.length, before, "a refused request reaches nothing");
      else {
        assert.equal(seen.length, before + 1);
        assert.equal(r.result!.status, 200);
        const got = seen.at(-1)!;
        assert.equal(got.host, new URL(row.p.url!).host, "the Host is the URL's, the address the checked one");
        assert.equal(got.method, (row.p.method ?? "GET").toUpperCase());
        assert.equal(new TextDecoder().decode(r.result!.body), `hello ${got.method} ${got.path}`);
        assert(r.result!.headers.some((x) => x.name.toLowerCase() === "x-target" && x.value === "agentless"));
      }
    });
  }
});

Deno.test("site.httpProxy without proxy targets in the spec checks the other guards only", async () => {
  const { h, cleanup } = await handler({ targets: [] });
  try {
    assert.equal((await outcome(h, ctxOf({ url: `http://127.0.0.1:${PORT}/a`, target_node_id: "n-z" }))).code, "ok");
    assert.equal((await outcome(h, ctxOf({ url: `http://127.0.0.1:${PORT}/redfish` }))).code, "forbidden-target");
    assert.equal((await outcome(h, ctxOf({ url: `http://10.0.0.6:${PORT}/` }))).code, "forbidden-target");
  } finally {
    await cleanup();
  }
});

Deno.test("site.httpProxy cuts the body at max_response_bytes and says so", async () => {
  const { h, cleanup } = await handler();
  try {
    const r = await outcome(h, ctxOf({ url: `http://127.0.0.1:${PORT}/big`, max_response_bytes: 10 }));
    assert.equal(r.code, "ok");
    assert.equal(r.result!.body.length, 10);
    assert.equal(r.result!.truncated, true);
    const whole = await outcome(h, ctxOf({ url: `http://127.0.0.1:${PORT}/big` }));
    assert.deepEqual([whole.result!.body.length, whole.result!.truncated], [100, false]);
  } finally {
    await cleanup();
  }
});

Deno.test("site.httpProxy's batch leaf subject binds the payload: one changed byte is another leaf", async () => {
  const { h, cleanup } = await handler();
  await cleanup();
  const a = ctxOf({ url: `http://127.0.0.1:${PORT}/reset`, method: "POST", body: new TextEncoder().encode("a") });
  const b = ctxOf({ url: `http://127.0.0.1:${PORT}/reset`, method: "POST", body: new TextEncoder().encode("b") });
  const sa = h.batchSubject!(a.command);
  assert.equal(sa, proxySubject("n-a", a.command.payload!.value));
  assert.match(sa, /^n-a#payload-sha256:[0-9a-f]{64}$/);
  assert.notEqual(sa, h.batchSubject!(b.command));
  const packed = packPayload("site.httpProxy", {
    target_node_id: "n-a",
    method: "POST",
    url: `http://127.0.0.1:${PORT}/reset`,
    body: new TextEncoder().encode("a"),
  });
  assert.equal(
    proxySubject("n-a", packed.value),
    sa,
    "the control plane computes the same subject from the payload it packs",
  );
});

globalThis.addEventListener("unload", () => void server.shutdown());
