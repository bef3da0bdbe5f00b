import assert from "node:assert/strict";
import { type Claim, conflictingClaim, selfConflict } from "./conflicts.ts";
import type { DeviceClass } from "./classes.ts";

const U = "GPU-aaaa";
const V = "GPU-bbbb";
const c = (cls: DeviceClass, atom: string, gpu = U, alloc = "a"): Claim => ({
  allocationId: alloc,
  class: cls,
  atom,
  gpuUuid: gpu,
});

// Parent-aware conflicts, one row per rule of the seed, and the combinations that must not conflict.
const ROWS: { name: string; held: Claim; asked: Claim; conflict: boolean }[] = [
  {
    name: "a whole GPU while part of it is held (MIG)",
    held: c("gpu.mig", `${U}/gi1/ci0`),
    asked: c("gpu", U),
    conflict: true,
  },
  {
    name: "a whole GPU while part of it is held (slot)",
    held: c("gpu.slot", `${U}/s0`),
    asked: c("gpu", U),
    conflict: true,
  },
  {
    name: "a MIG instance while its GPU is held whole",
    held: c("gpu", U),
    asked: c("gpu.mig", `${U}/gi1/ci0`),
    conflict: true,
  },
  { name: "a slot while its GPU is held whole", held: c("gpu", U), asked: c("gpu.slot", `${U}/s1`), conflict: true },
  { name: "the same atom twice (GPU)", held: c("gpu", U), asked: c("gpu", U), conflict: true },
  {
    name: "the same atom twice (MIG)",
    held: c("gpu.mig", `${U}/gi1/ci0`),
    asked: c("gpu.mig", `${U}/gi1/ci0`),
    conflict: true,
  },
  {
    name: "the same atom twice (slot)",
    held: c("gpu.slot", `${U}/s2`),
    asked: c("gpu.slot", `${U}/s2`),
    conflict: true,
  },
  {
    name: "two MIG instances of one GPU",
    held: c("gpu.mig", `${U}/gi1/ci0`),
    asked: c("gpu.mig", `${U}/gi2/ci0`),
    conflict: false,
  },
  { name: "two slots of one GPU", held: c("gpu.slot", `${U}/s0`), asked: c("gpu.slot", `${U}/s1`), conflict: false },
  { name: "two different GPUs", held: c("gpu", U), asked: c("gpu", V, V), conflict: false },
  {
    name: "a slot of another GPU than the one held whole",
    held: c("gpu", U),
    asked: c("gpu.slot", `${V}/s0`, V),
    conflict: false,
  },
];

Deno.test("conflicts are parent-aware", async (t) => {
  for (const row of ROWS) {
    await t.step(`${row.name}: ${row.conflict ? "overlap" : "no conflict"}`, () => {
      assert.equal(conflictingClaim(row.asked, [row.held]) !== undefined, row.conflict);
    });
  }
});

Deno.test("selfConflict finds a GPU and a part of it in one assignment", () => {
  assert.ok(selfConflict([c("gpu", U), c("gpu.slot", `${U}/s0`)]));
  assert.equal(selfConflict([c("gpu.slot", `${U}/s0`), c("gpu.slot", `${U}/s1`)]), undefined);
});
