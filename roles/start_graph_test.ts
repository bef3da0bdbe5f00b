/**
 * What an agent loads at start: the static module graph of each agent role's entry leaves out what only the root
 * helper runs (its server and host backends: nft rulesets, sshd files, libvirt XML; ~26 modules), and the
 * OpenTelemetry SDK (about 500 module files, loaded by `runtimes/telemetry/deferred.ts` when an export or `/metrics`
 * needs it), and pino (its CommonJS entry loads Node's module loader, `fs` and `worker_threads`; `core/log/json_logger.ts`
 * writes the same lines). Each cost the node time at every start before its first `Hello` (issue 24).
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);
const HELPER_ONLY = [
  "runtimes/helper/server.ts",
  "runtimes/helper/host_backends.ts",
  "runtimes/helper/dispatch.ts",
  "runtimes/nft/real_nft.ts",
  "runtimes/access/sshd_files.ts",
];

async function staticGraph(entry: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", new URL(entry, ROOT).pathname],
    cwd: ROOT.pathname,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const g = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    roots: string[];
    modules: { specifier: string; dependencies?: { code?: { specifier?: string }; isDynamic?: boolean }[] }[];
  };
  const deps = new Map(g.modules.map((m) => [m.specifier, m.dependencies ?? []]));
  const seen = new Set<string>();
  const todo = [...g.roots];
  while (todo.length > 0) {
    const s = todo.pop()!;
    if (seen.has(s)) continue;
    seen.add(s);
    for (const d of deps.get(s) ?? []) if (!d.isDynamic && d.code?.specifier) todo.push(d.code.specifier);
  }
  return [...seen].map((s) => s.replace(ROOT.href, ""));
}

/**
 * The `node:` modules an agent may load before its first `Hello`: its journal's `node:sqlite` (~3 ms). Any other
 * initialises more of Deno's Node layer at start (issue 24, measured alone against a bare run: `node:path` +7 ms,
 * `node:util` +10, `node:crypto` +18); bcd's own `core/util/` (path, args, sha256) stands in for what agents used of
 * them, and what only a command needs later (`node:net` for a tunnel, `node:crypto`'s streaming hash for a download)
 * is imported where it is used.
 */
const START_NODE_MODULES: Record<string, readonly string[]> = {
  node: ["node:sqlite"],
  sim: ["node:sqlite"],
  site: ["node:sqlite"],
  ramdisk: ["node:sqlite"],
  // The guest opens its turn device with node:fs (Deno reserves most of /dev to --allow-all); it has no journal.
  guest: ["node:fs"],
};

for (const [role, allowed] of Object.entries(START_NODE_MODULES)) {
  Deno.test(`the ${role} role's start graph loads no node: module but ${allowed.join(", ")}`, async () => {
    const graph = await staticGraph(`roles/${role}.ts`);
    assert.ok(graph.includes("roles/_cli.ts"), "the graph was read");
    assert.deepEqual(graph.filter((m) => m.startsWith("node:")).sort(), [...allowed].sort());
  });
}

for (const role of ["node", "sim", "site", "ramdisk"]) {
  Deno.test(`the ${role} role does not load the root helper's server or host backends at start`, async () => {
    const graph = await staticGraph(`roles/${role}.ts`);
    assert.ok(graph.includes("roles/_agent_cli.ts"), "the graph was read");
    assert.deepEqual(HELPER_ONLY.filter((m) => graph.includes(m)), []);
  });
  Deno.test(`the ${role} role does not load the OpenTelemetry SDK at start`, async () => {
    const graph = await staticGraph(`roles/${role}.ts`);
    assert.ok(graph.some((m) => m.startsWith("npm:")), "the graph's npm packages were read");
    assert.deepEqual(graph.filter((m) => m.includes("@opentelemetry/")), []);
  });
  Deno.test(`the ${role} role's start graph leaves out the canonical NodeSpec JSON and the classes' fromObject`, async () => {
    const graph = await staticGraph(`roles/${role}.ts`);
    assert.ok(graph.includes("proto/gen/bcd.js"), "the graph was read");
    // ~230 KB of generated code no agent runs (proto/from_object_split.ts): every byte costs a start CPU (issue 24).
    const convert = ["proto/canonical_json.ts", "proto/gen/bcd_from_object.js"];
    assert.deepEqual(convert.filter((m) => graph.includes(m)), []);
  });
  Deno.test(`the ${role} role's logger is bcd's own: no pino, whose entry loads Node's module loader and worker_threads`, async () => {
    const graph = await staticGraph(`roles/${role}.ts`);
    assert.ok(graph.includes("core/log/json_logger.ts"), "the graph was read");
    assert.deepEqual(graph.filter((m) => /\bpino\b/.test(m)), []);
  });
}

Deno.test("the sim role loads no helper client, protocol codec or argument tables: it has no helper", async () => {
  const graph = await staticGraph("roles/sim.ts");
  assert.ok(graph.includes("core/journal/journal.ts"), "the graph was read");
  const helperSide = [
    "runtimes/helper/client.ts",
    "runtimes/helper/ports.ts",
    "core/helper/codec.ts",
    "core/helper/args.ts",
  ];
  assert.deepEqual(helperSide.filter((m) => graph.includes(m)), []);
});

Deno.test("the node role loads the helper's client and codec, not its argument table: only the helper checks arguments", async () => {
  // The table and its request decoder (~50 KB of source, with the libvirt, host, disk and kexec checks) ran at no
  // agent's start but loaded at each one's through the codec and core/helper/mod.ts (issue 24).
  // The client loads when the start connects to the helper, beside the role's static graph.
  for (const entry of ["roles/node.ts", "runtimes/helper/client.ts"]) {
    const graph = await staticGraph(entry);
    assert.ok(graph.includes("core/helper/protocol.ts"), "the graph was read");
    const serverSide = graph.filter((m) => /^core\/helper\/(args(_\w+)?|arg_fields|request)\.ts$/.test(m));
    assert.deepEqual(serverSide, [], entry);
  }
});

Deno.test("the node role loads the host and access sections' convergers on their first passes, not at start", async () => {
  const graph = await staticGraph("roles/node.ts");
  assert.ok(graph.includes("core/converge/lazy.ts") && graph.includes("core/access/tunnels.ts"), "the graph was read");
  const lazy = graph.filter((m) =>
    m.startsWith("core/host/") || m === "runtimes/helper/ports_host.ts" ||
    ["core/access/converger.ts", "core/access/files.ts", "runtimes/helper/access_port.ts"].includes(m)
  );
  assert.deepEqual(lazy, []);
});

Deno.test("the node role loads the instances converger on the section's first pass where no runtime's wiring loads it", async () => {
  const graph = await staticGraph("roles/node.ts");
  assert.ok(graph.includes("roles/node_instances.ts"), "the graph was read");
  const converger = graph.filter((m) =>
    m.startsWith("core/rebind/") || m === "core/volumes/open_volumes.ts" ||
    ["converger.ts", "admission.ts", "snapshot_source.ts", "user_data.ts", "volume_step.ts", "network.ts"]
      .some((f) => m === `core/converge/instances/${f}`)
  );
  assert.deepEqual(converger, []);
});

for (const role of ["node", "site"]) {
  Deno.test(`the ${role} role loads the plugin host on first use (a driver.invoke, a runtime plugin found), not at start`, async () => {
    const graph = await staticGraph(`roles/${role}.ts`);
    assert.ok(graph.includes("roles/_plugins.ts"), "the graph was read");
    const host = ["core/plugins/host.ts", "core/plugins/source.ts", "core/plugins/plugin_runtime.ts"];
    assert.deepEqual(graph.filter((m) => [...host, "runtimes/helper/plugin_source.ts"].includes(m)), []);
  });
}

Deno.test("the node role loads the devices converger on the section's first pass; the GPU kinds load at start", async () => {
  const graph = await staticGraph("roles/node.ts");
  assert.ok(graph.includes("core/converge/devices/gpu_kind_handlers.ts"), "the graph was read");
  const passes = ["converger.ts", "plan.ts", "apply.ts", "env.ts", "wire.ts", "admission.ts", "slice.ts", "mod.ts"];
  assert.deepEqual(passes.filter((f) => graph.includes(`core/converge/devices/${f}`)), []);
});

for (const role of ["node", "site", "ramdisk", "sim"]) {
  Deno.test(`the ${role} role's start checks argument grants without loading the permission tables`, async () => {
    const graph = await staticGraph(`roles/${role}.ts`);
    assert.ok(graph.includes("roles/_cli.ts") && graph.includes("roles/arg_grants.ts"), "the graph was read");
    assert.ok(!graph.includes("roles/permissions.ts"));
  });
}

Deno.test("the node role loads nvidia-smi's parsers with its first GPU query, not at start", async () => {
  const graph = await staticGraph("roles/node.ts");
  assert.ok(graph.includes("runtimes/helper/ports.ts"), "the graph was read");
  assert.deepEqual(graph.filter((m) => m.startsWith("runtimes/nvidia/")), []);
});

// (The site's image cache downloads over https at start; its graph keeps the transfer code.)
for (const role of ["node"]) {
  Deno.test(`the ${role} role loads the https uploader, the release fetcher and the journal's inspection with their first use, not at start`, async () => {
    const graph = await staticGraph(`roles/${role}.ts`);
    assert.ok(graph.includes("runtimes/host/lazy_uploader.ts"), "the graph was read");
    const later = [
      "core/journal/inspect.ts",
      "proto/json_check.ts",
      "runtimes/host/https_put.ts",
      "runtimes/host/https_download.ts",
      "runtimes/daemon/release_fetcher.ts",
      "runtimes/daemon/helper_upgrader.ts",
      "core/converge/instances/domain_plan.ts",
    ];
    assert.deepEqual(later.filter((m) => graph.includes(m)), []);
  });
}

Deno.test("the node role loads the instance config delivery only when [instances] agent_config_url is set", async () => {
  const graph = await staticGraph("roles/node.ts");
  assert.ok(graph.includes("roles/node_instances.ts"), "the graph was read");
  const delivery = ["runtimes/agent_config/instance_delivery.ts", "runtimes/guest/framing_client.ts"];
  assert.deepEqual(delivery.filter((m) => graph.includes(m)), []);
});

Deno.test("the node role loads no instance runtime's code at start: it loads when the helper's probe finds a runtime", async () => {
  const graph = await staticGraph("roles/node.ts");
  assert.ok(graph.includes("roles/node_instances.ts"), "the graph was read");
  const runtimes = graph.filter((m) =>
    /^runtimes\/(libvirt|cloudhypervisor|migration|nft|volumes|guest)\//.test(m) ||
    /^core\/(balloon|turns|migration)\//.test(m) || m === "roles/node_runtimes.ts"
  );
  assert.deepEqual(runtimes, []);
});

for (const role of ["node", "site"]) {
  Deno.test(`the ${role} role loads its doctor's checks and the image checks only when those subcommands run`, async () => {
    const graph = await staticGraph(`roles/${role}.ts`);
    assert.ok(graph.includes("roles/doctor_cli.ts"), "the graph was read");
    const subcommandOnly = graph.filter((m) =>
      /^(core|runtimes)\/doctor\//.test(m) || m === "roles/doctor_run.ts" || m === "core/images/mod.ts"
    );
    assert.deepEqual(subcommandOnly, []);
  });
}

Deno.test("importing the Ed25519 module (WebCrypto verifier, signing, hex) loads no node: module; the node:crypto verifier is its own module", async () => {
  const graph = await staticGraph("core/pki/ed25519.ts");
  assert.ok(graph.includes("core/pki/ed25519.ts"), "the graph was read");
  assert.deepEqual(graph.filter((m) => m.startsWith("node:")), []);
  assert.ok((await staticGraph("core/pki/ed25519_sync.ts")).includes("node:crypto"), "node: modules are seen");
});

Deno.test("importing the envelope verifier and its Ed25519 thread loads no node: module: node:worker_threads and node:crypto load with the first verification", async () => {
  for (const m of ["core/pki/envelope.ts", "core/pki/ed25519_thread.ts"]) {
    const graph = await staticGraph(m);
    assert.ok(graph.includes(m), "the graph was read");
    assert.deepEqual(graph.filter((d) => d.startsWith("node:")), [], m);
  }
});
