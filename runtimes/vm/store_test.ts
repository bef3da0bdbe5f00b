import assert from "node:assert/strict";
import { join } from "node:path";
import { claimScratch, refuseOthersClaim, releaseScratch, ScratchClaimed, selfIdentity } from "./store.ts";

Deno.test("a scratch image's claim: refuseOthersClaim refuses another sandbox's live VM and claims nothing", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-vm-claim-" });
  try {
    const scratch = join(dir, "scratch.ext4");
    await Deno.writeFile(scratch, new Uint8Array(4096));
    const live = await selfIdentity();
    const dead = { pid: live.pid, startTime: `${live.startTime}0` }; // this pid, another start: not the holder
    const rows: { name: string; holder: typeof live | null; asker: string; refused: boolean }[] = [
      { name: "no claim", holder: null, asker: "store-b", refused: false },
      { name: "another sandbox's live VM", holder: live, asker: "store-b", refused: true },
      { name: "the asker's own claim", holder: live, asker: "store-a", refused: false },
      { name: "another sandbox's VM that has ended", holder: dead, asker: "store-b", refused: false },
    ];
    for (const r of rows) {
      await t.step(r.name, async () => {
        await Deno.writeTextFile(`${scratch}.bcd-claim`, "");
        if (r.holder !== null) await claimScratch(scratch, "store-a", r.holder);
        const before = await Deno.readTextFile(`${scratch}.bcd-claim`);
        if (r.refused) {
          await assert.rejects(
            refuseOthersClaim(scratch, r.asker),
            (e: unknown) =>
              e instanceof ScratchClaimed && /claimed by the VM of sandbox store-a \(pid \d+\)/.test(e.message),
          );
        } else {
          await refuseOthersClaim(scratch, r.asker);
        }
        assert.equal(await Deno.readTextFile(`${scratch}.bcd-claim`), before, "the claim file is unchanged");
        await releaseScratch(scratch, "store-a");
      });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
