/**
 * Child of `fsync_order_test.ts`: accepts, marks running and finishes a command, printing a marker after each
 * call returns, so an strace of this process shows whether the WAL was fsynced before the call returned; then only
 * reads, which must cost no fsync.
 *
 * @module
 */
import { Journal } from "./journal.ts";

const dir = Deno.args[0]!;
const j = await Journal.open({ dataDir: dir, bootId: "b" });
const enc = new TextEncoder();
const mark = (what: string) => Deno.stdout.writeSync(enc.encode(`MARK ${what}\n`));
const flags = { kind: "node.reboot", retrySafe: true, selfTerminating: true };
for (let i = 0; i < 3; i++) {
  await j.accept(`c${i}`, flags);
  mark(`accepted c${i}`);
  await j.markRunning(`c${i}`);
  mark(`running c${i}`);
  await j.finish(`c${i}`, { state: "SUCCEEDED" });
  mark(`done c${i}`);
}
// Calls that only read commit nothing: they cost no fsync.
for (let i = 0; i < 3; i++) await j.get(`c${i}`);
await j.unackedResults();
mark("read-only");
await j.close();
