import assert from "node:assert/strict";
import { denoRunner, InitRebooter } from "./rebooter.ts";

Deno.test("InitRebooter asks systemctl first, falls back to reboot, and fails with both answers", async (t) => {
  const rows: [string, Record<string, boolean>, string[], boolean][] = [
    ["systemctl accepts", { systemctl: true, reboot: true }, ["systemctl reboot"], true],
    ["systemctl refuses, reboot accepts", { systemctl: false, reboot: true }, ["systemctl reboot", "reboot"], true],
    ["neither accepts", { systemctl: false, reboot: false }, ["systemctl reboot", "reboot"], false],
  ];
  for (const [name, ok, wantCalls, wantOk] of rows) {
    await t.step(name, async () => {
      const calls: string[] = [];
      const r = new InitRebooter((cmd, args) => {
        calls.push([cmd, ...args].join(" "));
        return Promise.resolve({ success: ok[cmd]!, detail: ok[cmd] ? "" : "exit 1" });
      });
      if (wantOk) await r.reboot("test");
      else await assert.rejects(r.reboot("test"), /systemctl reboot: exit 1; reboot: exit 1/);
      assert.deepEqual(calls, wantCalls);
    });
  }
});

Deno.test("denoRunner reports a missing binary as a failure instead of throwing", async () => {
  assert.deepEqual(await denoRunner("bcd-no-such-binary-xyz", []), { success: false, detail: "not installed" });
  const f = await denoRunner("false", []);
  assert.equal(f.success, false);
});
