import assert from "node:assert/strict";
import { defaultRootConfig, encodeFrame, encodeRootConfig, Kind } from "../core/framing/mod.ts";
import { childConn } from "../runtimes/guest/framing_conn.ts";
import { FramingClient } from "../runtimes/guest/framing_client.ts";
import { NO_LAYERED_ROOT } from "../guest/serve.ts";
import { roleFlags } from "./permissions.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** `bcd-guest serve` with the guest role's own permissions, over pipes. */
export function spawnGuest(
  args: string[],
  env: Record<string, string> = {},
  extraWrite: string[] = [],
): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", ...roleFlags("guest", { extraWrite }), `${ROOT}roles/guest.ts`, ...args],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    env: { BCD_LOG_LEVEL: "warn", ...env },
  }).spawn();
}

async function stderrOf(child: Deno.ChildProcess): Promise<string> {
  return new TextDecoder().decode(await new Response(child.stderr).arrayBuffer());
}

Deno.test("guest serve over pipes: ping, the longest echo, a probe, stop, exit 0", async () => {
  const child = spawnGuest(["serve"]);
  const err = stderrOf(child);
  const c = await FramingClient.attach(childConn(child), { requestTimeoutMs: 20_000 });
  await c.ping();
  await c.echo(new Uint8Array(256 * 1024).map((_, i) => (i * 7) & 0xff));
  assert.deepEqual(await c.probe({ name: "mounts", args: [] }), { problem: NO_LAYERED_ROOT });
  assert.equal(await c.stop(), null);
  const st = await child.status;
  assert.equal(st.code, 0, await err);
  c.close();
});

Deno.test("guest serve exits 0 when the host closes its stdin at a message boundary", async () => {
  const child = spawnGuest(["serve"]);
  const err = stderrOf(child);
  const w = child.stdin.getWriter();
  await w.write(encodeFrame(Kind.Ping));
  await w.close();
  const out = new Uint8Array(await new Response(child.stdout).arrayBuffer());
  assert.deepEqual([...out], [...encodeFrame(Kind.Pong)]);
  assert.equal((await child.status).code, 0, await err);
});

Deno.test("guest serve exits 1 with a diagnostic on messages about a layered root, executions, and bad headers", async (t) => {
  const rows: [string, Uint8Array, RegExp][] = [
    ["a root configuration", encodeFrame(Kind.RootConfig, encodeRootConfig(defaultRootConfig())), /layered root/],
    ["a header beyond its limit, alone", Uint8Array.of(0, 0, 8, 0, Kind.Echo), /at most/],
    ["a guest-only kind", encodeFrame(Kind.Stopped), /not sent from this side/],
    ["a stream that ends inside a message", encodeFrame(Kind.Echo, new Uint8Array(8)).subarray(0, 9), /ended inside/],
  ];
  for (const [name, bytes, want] of rows) {
    await t.step(name, async () => {
      const child = spawnGuest(["serve"]);
      const err = stderrOf(child);
      const w = child.stdin.getWriter();
      await w.write(bytes);
      if (name.includes("ends inside")) await w.close();
      const st = await child.status;
      await child.stdout.cancel();
      assert.equal(st.code, 1);
      assert.match(await err, want);
      await w.close().catch(() => {/* the guest may have closed it */});
    });
  }
});

Deno.test("guest serve installs an agent config bundle at BCD_GUEST_ROOT/agent-config with the role's own flags", async () => {
  const root = await Deno.makeTempDir({ prefix: "bcd-guest-root-" });
  const src = await Deno.makeTempDir({ prefix: "bcd-bundle-" });
  await Deno.writeTextFile(`${src}/agent.yaml`, "model: x\n");
  const tar = await new Deno.Command("tar", { args: ["-czf", "-", "-C", src, "."], stdout: "piped" }).output();
  assert.ok(tar.success);
  const child = spawnGuest(["serve"], { BCD_GUEST_ROOT: root }, [root]);
  const err = stderrOf(child);
  const c = await FramingClient.attach(childConn(child), { requestTimeoutMs: 20_000 });
  assert.equal(await c.installAgentConfig("v-1", tar.stdout), true);
  assert.equal(await Deno.readTextFile(`${root}/agent-config/current/agent.yaml`), "model: x\n");
  await c.stop();
  assert.equal((await child.status).code, 0, await err);
  c.close();
  await Deno.remove(root, { recursive: true });
  await Deno.remove(src, { recursive: true });
});
