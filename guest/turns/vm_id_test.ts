import assert from "node:assert/strict";
import { resolveVmId, VmIdError } from "./vm_id.ts";

const A = "7e57a1b2-0000-4000-8000-0123456789ab";
const B = "11111111-2222-4333-8444-555555555555";

function _files(files: Record<string, string>) {
  return (p: string) => Promise.resolve(Object.hasOwn(files, p) ? files[p]! : null);
}

Deno.test("the VM id comes from the flag, then the kernel command line, then /etc/bcd/vm-id", async () => {
  const all = _files({ "/proc/cmdline": `console=ttyS0 bcd.vm_id=${A} quiet\n`, "/etc/bcd/vm-id": `${B}\n` });
  assert.deepEqual(await resolveVmId(B, all), { vmId: B, source: "flag" });
  assert.deepEqual(await resolveVmId(undefined, all), { vmId: A, source: "cmdline" });
  const fileOnly = _files({ "/proc/cmdline": "console=ttyS0\n", "/etc/bcd/vm-id": `${B}\n` });
  assert.deepEqual(await resolveVmId(undefined, fileOnly), { vmId: B, source: "file" });
});

Deno.test("no id anywhere, or one that is not a UUID, is refused", async () => {
  await assert.rejects(resolveVmId(undefined, _files({ "/proc/cmdline": "quiet" })), VmIdError);
  await assert.rejects(resolveVmId("vm-1", _files({})), /not a UUID/);
  await assert.rejects(resolveVmId(undefined, _files({ "/proc/cmdline": "bcd.vm_id=x" })), VmIdError);
});

Deno.test("upper-case UUIDs are normalised to lower case", async () => {
  assert.equal((await resolveVmId(A.toUpperCase(), _files({}))).vmId, A);
});
