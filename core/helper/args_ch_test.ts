import assert from "node:assert/strict";
import { HelperError } from "./errors.ts";
import { checkArgs } from "./args.ts";

Deno.test("ch.* arguments are default-deny: an instance id and a NIC index only, never a path, a tap or a bridge", async (t) => {
  const refused: Array<
    [
      string,
      "ch.launch" | "ch.add_net" | "ch.restore" | "ch.taps" | "ch.vfio" | "ch.unvfio" | "ch.memory",
      unknown,
      string,
    ]
  > = [
    ["a path as the id", "ch.launch", { id: "../../etc" }, "id"],
    ["a unit name as the id", "ch.launch", { id: "x.socket/y" }, "id"],
    ["a tap name beside the id", "ch.taps", { id: "vm-1", tap: "eth0" }, "tap"],
    ["a bridge beside the id", "ch.taps", { id: "vm-1", bridge: "br0" }, "bridge"],
    ["a NIC index past 15", "ch.add_net", { id: "vm-1", index: 16 }, "index"],
    ["a negative NIC index", "ch.add_net", { id: "vm-1", index: -1 }, "index"],
    ["a fractional NIC index", "ch.add_net", { id: "vm-1", index: 0.5 }, "index"],
    ["an fd number", "ch.add_net", { id: "vm-1", index: 0, fd: 3 }, "fd"],
    ["a restore source path", "ch.restore", { id: "vm-1", resume: true, source_url: "file:///etc" }, "source_url"],
    ["a resume that is not a boolean", "ch.restore", { id: "vm-1", resume: "yes" }, "resume"],
    [
      "a PCI address (root takes the GPUs from the record)",
      "ch.vfio",
      { id: "vm-1", pciBusId: "0000:18:00.0" },
      "pciBusId",
    ],
    ["an IOMMU group", "ch.unvfio", { id: "vm-1", group: "10" }, "group"],
    ["a cgroup path as the id", "ch.memory", { id: "../../../sys/fs/cgroup" }, "id"],
    ["a file beside the id", "ch.memory", { id: "vm-1", file: "/proc/self/status" }, "file"],
  ];
  for (const [what, op, args, field] of refused) {
    await t.step(`${op} refuses ${what}`, () => {
      assert.throws(() => checkArgs(op, args), (e) => e instanceof HelperError && e.message.includes(field));
    });
  }
  await t.step("the well-formed ones pass", () => {
    assert.deepEqual(checkArgs("ch.add_net", { id: "vm-1", index: 15 }), { id: "vm-1", index: 15 });
    assert.deepEqual(checkArgs("ch.restore", { id: "vm-1", resume: false }), { id: "vm-1", resume: false });
    assert.deepEqual(checkArgs("ch.stop", { id: "vm-1" }), { id: "vm-1" });
    assert.deepEqual(checkArgs("ch.memory", { id: "vm-1" }), { id: "vm-1" });
  });
});
