import assert from "node:assert/strict";
import { checkArgs } from "./args.ts";
import { HelperError } from "./errors.ts";
import type { HelperOp } from "./protocol.ts";

const refusals: { name: string; op: HelperOp; args: unknown; code: string; msg: RegExp }[] = [
  {
    name: "a sysctl key outside the allowlist",
    op: "sysctl.apply",
    args: { steps: [{ op: "set", key: "kernel.core_pattern", value: "|/bin/sh" }] },
    code: "invalid-argument",
    msg: /steps\[0\]\.key "kernel\.core_pattern" is not an allowed sysctl key/,
  },
  {
    name: "a path as a sysctl key",
    op: "sysctl.read",
    args: { keys: ["net/../../../etc/shadow"] },
    code: "invalid-argument",
    msg: /keys\[0\] .* is not an allowed sysctl key/,
  },
  {
    name: "a value on two lines",
    op: "sysctl.apply",
    args: { steps: [{ op: "set", key: "vm.swappiness", value: "1\nvm.x = 2" }] },
    code: "invalid-argument",
    msg: /steps\[0\]\.value .* is not one line/,
  },
  {
    name: "a restore carrying a value",
    op: "sysctl.apply",
    args: { steps: [{ op: "restore", key: "vm.swappiness", value: "1" }] },
    code: "unknown-field",
    msg: /unknown field steps\[0\]\.value/,
  },
  {
    name: "no steps",
    op: "sysctl.apply",
    args: { steps: [] },
    code: "invalid-argument",
    msg: /steps \[\] is not a list of 1 to 256/,
  },
  {
    name: "an unknown field",
    op: "hugepages.read",
    args: { path: "/sys" },
    code: "unknown-field",
    msg: /unknown field args\.path/,
  },
  {
    name: "a page size bcd does not manage",
    op: "hugepages.apply",
    args: { steps: [{ op: "set", size: "16G", count: 1 }] },
    code: "invalid-argument",
    msg: /steps\[0\]\.size "16G" is not one of 2M, 1G/,
  },
  {
    name: "a NUMA node as a string",
    op: "hugepages.apply",
    args: { steps: [{ op: "set", size: "2M", node: "0/../../", count: 1 }] },
    code: "invalid-argument",
    msg: /steps\[0\]\.node .* is not an integer from 0 to 1023/,
  },
  {
    name: "a negative count",
    op: "hugepages.apply",
    args: { steps: [{ op: "set", size: "2M", count: -1 }] },
    code: "invalid-argument",
    msg: /steps\[0\]\.count -1 is not an integer/,
  },
];

Deno.test("the host unit ops refuse, row by row, naming op, field and value", async (t) => {
  for (const r of refusals) {
    await t.step(r.name, () => {
      assert.throws(
        () => checkArgs(r.op, r.args),
        (e) => e instanceof HelperError && e.code === r.code && r.msg.test(e.message) && e.message.includes(r.op),
      );
    });
  }
});

Deno.test("the host unit ops return exactly the checked steps", () => {
  assert.deepEqual(
    checkArgs("hugepages.apply", {
      steps: [{ op: "set", size: "2M", node: 1, count: 8 }, { op: "restore", size: "1G" }],
    }),
    { steps: [{ op: "set", size: "2M", node: 1, count: 8 }, { op: "restore", size: "1G" }] },
  );
  assert.deepEqual(checkArgs("sysctl.read", { keys: ["net.core.somaxconn"] }), { keys: ["net.core.somaxconn"] });
});
