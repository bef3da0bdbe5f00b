/**
 * The sim and node roles run from start to their first `Hello` without anything touching the globals that wake
 * Deno's Node compatibility layer (`process`, `Buffer`, `global`, `setImmediate`, `clearImmediate`: ~15-25 ms of a
 * start, issue 24). Each role runs under its own permission flags behind `fixtures/start/touch_trap.ts`, which reports
 * every touch with the module that made it (bcd's, an npm package's, or Deno's own loader's); none may happen. Nor may
 * either role call `setTimeout` or `setInterval` (Deno 2.9's are the Node layer's: ~10 ms at the first call; the
 * connect, handshake and tickers run on `core/clock.ts`'s signal timers, the node's helper client on one such timer
 * per client). Nor may either compile code from a string (`new Function`: the message classes' codecs the start calls
 * come compiled with the bundle, `proto/start_codecs.ts`). The static graph test (`start_graph_test.ts`) covers the
 * `node:` imports.
 */
import assert from "node:assert/strict";
import { roleFlags } from "./permissions.ts";
import { helloServer } from "../fixtures/start/hello_server.ts";
import { TestbedGateway } from "../fixtures/testbed/gateway.ts";
import { SimNode } from "../fixtures/testbed/sim_node.ts";
import { AgentWithHelper } from "../fixtures/testbed/node_helper.ts";

const ROOT = new URL("../", import.meta.url).pathname;

type Touch = { name: string; by: string };

function touches(stderr: string): Touch[] {
  return stderr.split("\n").filter((l) => l.startsWith("BCD-TOUCH ")).map((l) => JSON.parse(l.slice(10)) as Touch);
}

/** Runs `entry run --config CONFIG --gateway <stand-in>` to its first Hello; the touches it reported by then. */
async function touchesToHello(
  entry: string,
  flags: string[],
  config: string,
  env: Record<string, string>,
): Promise<Touch[]> {
  const gw = helloServer();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...flags, `${ROOT}fixtures/start/${entry}`, "run", "--config", config, "--gateway", gw.url],
    cwd: ROOT,
    env: { BCD_LOG_LEVEL: "warn", ...env },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const first = await Promise.race([gw.hello.then(() => "hello"), child.status.then((s) => `exit ${s.code}`)]);
  try {
    child.kill("SIGKILL");
  } catch (e) {
    if (!(e instanceof TypeError)) throw e; // it had exited
  }
  await child.status;
  await gw.shutdown();
  const err = await stderr;
  assert.equal(first, "hello", `${entry} reached its Hello: ${err.slice(-600)}`);
  return touches(err);
}

Deno.test("the touch trap reports a module's own touches of process and Buffer, its setTimeout and its new Function with that module", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", `${ROOT}fixtures/start/control_touch.ts`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  assert.equal(new TextDecoder().decode(out.stdout).trim(), '["object","function"]');
  const ts = touches(new TextDecoder().decode(out.stderr));
  assert.deepEqual(ts.map((t) => t.name), ["process", "Buffer", "setTimeout", "Function"]);
  for (const t of ts) assert.match(t.by, /fixtures\/start\/control_touch\.ts$/);
});

Deno.test("the sim role touches no Node global (process, Buffer, global, setImmediate), arms no setTimeout and compiles no Function before its first Hello", async () => {
  const gw = await TestbedGateway.start({ heartbeatIntervalMs: 60_000 });
  const sim = await SimNode.start(gw);
  try {
    await gw.until(() => gw.nodes.get(sim.nodeId)?.session, "the sim's first session");
    await sim.stop(true);
    const ts = await touchesToHello("sim_touch.ts", roleFlags("sim"), `${sim.dataDir}/config.toml`, {
      BCD_BOOT_ID_PATH: `${sim.dataDir}/boot_id`,
    });
    assert.deepEqual(ts, []);
  } finally {
    await gw.stop();
    await Deno.remove(sim.dataDir, { recursive: true });
  }
});

Deno.test({
  name:
    "the node role, beside a real bcd-helper, touches no Node global, arms no setTimeout and compiles no Function before its first Hello",
  ignore: Deno.uid() !== 0 && (console.error("  (skipped: bcd-helper needs root)"), true),
  async fn() {
    const gw = await TestbedGateway.start({ heartbeatIntervalMs: 60_000 });
    const node = await AgentWithHelper.start(gw, { role: "node" });
    try {
      await gw.until(() => gw.nodes.get(node.nodeId)?.session, "the node's first session");
      await node.stopAgent();
      const ts = await touchesToHello("node_touch.ts", node.agentFlags(), node.config, {});
      assert.deepEqual(ts, []);
    } finally {
      await node.stop();
      await gw.stop();
    }
  },
});
