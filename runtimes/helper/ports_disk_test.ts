// HelperDiskWiper's cancel: sent without waiting while the wipe's own call goes on. A cancel the helper could not take
// (HelperError) leaves the wipe's answer as it is; any other failure of the cancel is this side's fault and comes back
// from the wipe's call, never as an unhandled rejection that would end the agent.
import assert from "node:assert/strict";
import { HelperError } from "../../core/helper/mod.ts";
import type { DiskWipeAnswer } from "../../core/disks/mod.ts";
import type { HelperClient } from "./client.ts";
import { HelperDiskWiper } from "./ports_disk.ts";

const ANSWER: DiskWipeAnswer = { diskId: "loop-a", ok: false, reason: "cancelled", message: "cancelled", attempts: [] };

/** A client whose `disk.wipe` answers once the cancel was sent, and whose `disk.wipe_cancel` fails with `cancelError`. */
function _client(cancelError: unknown) {
  const calls: string[] = [];
  let release: () => void = () => {};
  const cancelled = new Promise<void>((r) => (release = r));
  const client = {
    call(op: string): Promise<unknown> {
      calls.push(op);
      if (op === "disk.wipe") return cancelled.then(() => ANSWER);
      // the rejection is observed only after the wipe's answer (a microtask later), as a late helper answer would be
      const failed = Promise.reject(cancelError);
      release();
      return failed;
    },
  } as unknown as HelperClient;
  return { client, calls };
}

for (
  const [name, error, expect] of [
    ["a cancel the helper refused leaves the wipe's own answer", new HelperError("unreachable", "gone"), "answer"],
    ["a cancel that failed on this side comes back from the wipe's call", new TypeError("bad state"), "thrown"],
  ] as const
) {
  Deno.test(`HelperDiskWiper: ${name}`, async () => {
    const c = _client(error);
    const ac = new AbortController();
    const wiping = new HelperDiskWiper(c.client).wipe(
      { diskId: "loop-a", pattern: "zero", verify: "sample" },
      ac.signal,
    );
    ac.abort();
    if (expect === "answer") assert.deepEqual(await wiping, ANSWER);
    else await assert.rejects(wiping, (e) => e === error);
    assert.deepEqual(c.calls, ["disk.wipe", "disk.wipe_cancel"]);
  });
}
