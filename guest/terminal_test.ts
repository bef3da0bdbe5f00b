import assert from "node:assert/strict";
import { childStatus, spawnOnTerminal } from "./terminal.ts";

Deno.test("the agent waits for the tty to appear, then runs on it", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/tty`;
  const child = spawnOnTerminal(path, { cmd: "sh", args: ["-c", "test -c /dev/stdin"] }, 5000);
  await new Promise((r) => setTimeout(r, 250));
  await Deno.symlink("/dev/null", path);
  assert.equal(await childStatus(child), 0);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a tty that never appears, and a path that is no character device, fail with 1", async () => {
  const dir = await Deno.makeTempDir();
  const t0 = performance.now();
  assert.equal(await childStatus(spawnOnTerminal(`${dir}/none`, { cmd: "true", args: [] }, 300)), 1);
  assert.ok(performance.now() - t0 >= 250, "it waited");
  await Deno.writeTextFile(`${dir}/file`, "");
  assert.equal(await childStatus(spawnOnTerminal(`${dir}/file`, { cmd: "true", args: [] }, 300)), 1);
  await Deno.remove(dir, { recursive: true });
});
