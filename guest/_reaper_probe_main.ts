/**
 * A test program for `reaper_test.ts`: it makes itself a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`), as PID 1
 * is for the whole VM, leaves an orphan that the kernel reparents to it, lets the orphan exit, and collects it with
 * the real {@link OrphanReaper} over libc's `waitpid`. It prints one JSON line: the orphan's ID, its state once it
 * exited, the IDs that the sweep collected, and whether its own child's status still reached Deno.
 *
 * @module
 */
import { createLogger } from "../core/log/mod.ts";
import { libcWaitPid, listProcesses, OrphanReaper } from "./reaper.ts";

const PR_SET_CHILD_SUBREAPER = 36;
const libc = Deno.dlopen(
  "libc.so.6",
  {
    prctl: { parameters: ["i32", "u64", "u64", "u64", "u64"], result: "i32" },
  } as const,
);
if (libc.symbols.prctl(PR_SET_CHILD_SUBREAPER, 1n, 0n, 0n, 0n) !== 0) throw new Error("prctl failed");

const fifo = Deno.args[0]!;
// The shell starts the orphan, prints its ID and ends; the orphan waits for a line on the FIFO, then exits.
const sh = await new Deno.Command("sh", {
  args: ["-c", 'sh -c "read x < $0" "$0" >/dev/null 2>&1 & echo $!', fifo],
  stdout: "piped",
}).output();
const orphan = Number(new TextDecoder().decode(sh.stdout).trim());
const state = async () => (await listProcesses()).find((p) => p.pid === orphan);
// Adopted: the kernel reparents it once the shell ended (the shell's status was already taken).
for (let i = 0; (await state())?.ppid !== Deno.pid; i++) {
  if (i > 600) throw new Error(`the orphan ${orphan} was never adopted`);
  await new Promise((r) => setTimeout(r, 50));
}
await Deno.writeTextFile(fifo, "go\n");
for (let i = 0; (await state())?.state !== "Z"; i++) {
  if (i > 600) throw new Error(`the orphan ${orphan} never exited`);
  await new Promise((r) => setTimeout(r, 50));
}
const own = new Deno.Command("sh", { args: ["-c", "exit 7"] }).spawn();
const ownStatus = own.status;
const reaper = new OrphanReaper({
  parent: Deno.pid,
  own: () => new Set([own.pid]),
  waitpid: libcWaitPid()!,
  log: createLogger({ level: "silent" }),
});
const collected = await reaper.sweep();
const after = await state();
console.log(JSON.stringify({
  orphan,
  stateBefore: "Z",
  collected,
  after: after?.state ?? "gone",
  ownCode: (await ownStatus).code,
}));
