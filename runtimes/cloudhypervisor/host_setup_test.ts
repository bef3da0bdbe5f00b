import assert from "node:assert/strict";
import { chBackend, findOnPath } from "./host_setup.ts";

Deno.test("the cloud-hypervisor runtime is on only when root's PATH has the binary; otherwise the helper has no ch backend", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-ch-path-" });
  try {
    await Deno.mkdir(`${dir}/bin`);
    await Deno.mkdir(`${dir}/data`);
    assert.equal(await chBackend(`${dir}/data`, { bridges: [], path: `${dir}/bin:relative/bin` }), undefined);
    await Deno.writeTextFile(`${dir}/bin/cloud-hypervisor`, "#!/bin/sh\n");
    assert.equal(await findOnPath("cloud-hypervisor", `${dir}/bin`), undefined, "not executable: not a binary");
    await Deno.chmod(`${dir}/bin/cloud-hypervisor`, 0o755);
    assert.equal(await findOnPath("cloud-hypervisor", `relative:${dir}/bin`), `${dir}/bin/cloud-hypervisor`);
    assert.ok(await chBackend(`${dir}/data`, { bridges: ["br0"], path: `${dir}/bin` }));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
