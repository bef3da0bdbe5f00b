import assert from "node:assert/strict";
import { isKernelThread, isKernelThreadStat } from "./kernel_thread.ts";

Deno.test("isKernelThreadStat() reads PF_KTHREAD from the flags, whatever the command's name holds", () => {
  // kthreadd and a user process, as a 6.1 kernel writes them (flags 2129984 = 0x208040; 4194560 = 0x400100).
  assert.equal(isKernelThreadStat("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 3 0 0"), true);
  assert.equal(isKernelThreadStat("42 (a) b) S 1 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 9 0 0"), false);
  assert.throws(() => isKernelThreadStat("42 no parenthesis"), RangeError);
});

Deno.test("isKernelThread() says false for this process and for a process that is gone", async () => {
  assert.equal(await isKernelThread(String(Deno.pid)), false);
  assert.equal(await isKernelThread("999999999"), false);
});
