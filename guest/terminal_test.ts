import assert from "node:assert/strict";
import { childStatus, spawnOnTerminal } from "./terminal.ts";
import { waitFor } from "../fixtures/poll.ts";

/** Whether the shell `pid` is in its wait loop: it has a `sleep` child. */
async function waiting(pid: number): Promise<boolean> {
  const list = await Deno.readTextFile(`/proc/${pid}/task/${pid}/children`).catch((e) => {
    if (e instanceof Deno.errors.NotFound) return ""; // the shell itself just ended
    throw e;
  });
  const children = list.trim().split(/\s+/).filter(Boolean);
  for (const c of children) {
    const cmd = await Deno.readTextFile(`/proc/${c}/cmdline`).catch((e) => {
      if (e instanceof Deno.errors.NotFound) return ""; // that sleep just ended
      throw e;
    });
    if (cmd.startsWith("sleep\0")) return true;
  }
  return false;
}

Deno.test("the agent waits for the tty to appear, then runs on it", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/tty`;
  const child = spawnOnTerminal(path, { cmd: "sh", args: ["-c", "test -c /dev/stdin"] }, 30_000);
  // The tty appears only once the shell is waiting for it (a sleep of its loop runs), not after a guessed delay.
  await waitFor(() => waiting(child.pid), "the shell waits for the tty");
  await Deno.symlink("/dev/null", path);
  assert.equal(await childStatus(child), 0);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a tty that never appears, and a path that is no character device, fail with 1", async () => {
  const dir = await Deno.makeTempDir();
  // It waits before it fails: its wait loop is seen running (a sleep child), not a duration measured.
  const none = spawnOnTerminal(`${dir}/none`, { cmd: "true", args: [] }, 1_000);
  let ended = false;
  const status = childStatus(none).then((s) => (ended = true, s));
  await waitFor(async () => ended || await waiting(none.pid), "the shell waits for the tty");
  assert.equal(ended, false, "it failed before it waited");
  assert.equal(await status, 1);
  await Deno.writeTextFile(`${dir}/file`, "");
  assert.equal(await childStatus(spawnOnTerminal(`${dir}/file`, { cmd: "true", args: [] }, 300)), 1);
  await Deno.remove(dir, { recursive: true });
});
