/**
 * The probes of the guest's processes that bcd adds to the seed's table ("A new check of a root is a new probe in
 * this table"), both about PID 1's collection of adopted processes (`guest/reaper.ts`):
 *
 * | Probe     | Facts |
 * | --------- | ----- |
 * | `orphan`  | It leaves an orphan: a shell that the worker's child starts in the background and that waits until the kernel reparented it (to PID 1), then exits. `pid`, its process ID, and `end`: `collected` once it is gone from `/proc` (PID 1 took its status), `zombie` when it is still a zombie after {@link ORPHAN_WAIT_MS}, or `running` |
 * | `zombies` | The guest's zombies, every process that `/proc` shows in state Z: `count`, and `pids`, separated by spaces |
 *
 * @module
 */
import type { Facts } from "../core/framing/mod.ts";
import { listProcesses } from "./reaper.ts";

/** How long `orphan` waits for PID 1 to collect its orphan. */
export const ORPHAN_WAIT_MS = 60_000;

/**
 * The orphan: it exits once the kernel reparented it — to PID 1 in a VM, which no subreaper stands before — that is
 * once its parent (field 4 of its stat; its command, `sh`, holds no space) is no longer the shell that started it,
 * whose ID that shell passes as `$1` (the orphan's own `$PPID` would already be its new parent's if the shell ended
 * before the orphan's shell started).
 */
const ORPHAN = 'while read -r a b c d e < /proc/$$/stat; [ "$d" = "$1" ]; do sleep 0.1; done';

/** `orphan`. */
export async function probeOrphan(waitMs = ORPHAN_WAIT_MS): Promise<Facts> {
  const out = await new Deno.Command("sh", {
    args: ["-c", 'sh -c "$0" orphan "$$" </dev/null >/dev/null 2>&1 & echo $!', ORPHAN],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const pid = Number(new TextDecoder().decode(out.stdout).trim());
  if (!out.success || !Number.isInteger(pid) || pid <= 0) {
    throw new Error(`the orphan's shell failed: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
  const until = Date.now() + waitMs;
  let state: string | null;
  for (;;) {
    state = (await listProcesses()).find((p) => p.pid === pid)?.state ?? null;
    if (state === null || Date.now() > until) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return [["pid", String(pid)], ["end", state === null ? "collected" : state === "Z" ? "zombie" : "running"]];
}

/** `zombies`. */
export async function probeZombies(): Promise<Facts> {
  const z = (await listProcesses()).filter((p) => p.state === "Z").map((p) => p.pid).sort((a, b) => a - b);
  return [["count", String(z.length)], ["pids", z.join(" ")]];
}
