/**
 * The shared `InstanceRuntime` contract (`runtimes/instance_runtime_contract_testing.ts`, the suite `libvirt-kvm` runs
 * too) against the `cloud-hypervisor` runtime over the fake VMM, fake systemd and fake taps. cloud-hypervisor is not
 * packaged for these machines, so there is no real backend to run it against.
 */
import { instanceRuntimeContract } from "../instance_runtime_contract_testing.ts";
import { chTestEnv } from "./ch_testing.ts";

instanceRuntimeContract("cloud-hypervisor", "fake VMM, fake systemd", async () => {
  const env = await chTestEnv();
  if ("skip" in env) return env;
  return {
    rt: env.rt,
    srv: env.srv,
    dir: env.dir,
    imagesDir: `${env.dataDir}/cloud-hypervisor/images`,
    plantForeign: async (id) => {
      const d = env.rt.instanceDir(id);
      await Deno.mkdir(d, { recursive: true });
      await Deno.writeTextFile(`${d}/disk.qcow2`, "someone else's");
    },
    foreignUntouched: async (id) =>
      (await Deno.readTextFile(`${env.rt.instanceDir(id)}/disk.qcow2`)) === "someone else's" &&
      env.systemd.calls.every((c) => !c.startsWith("run ")),
    runningDiskSize: (id) => {
      const vmm = env.systemd.units.get(`bcd-ch-${id}.service`)?.vmm;
      return Promise.resolve(vmm?.diskSizes.get("_disk0") ?? -1);
    },
    cleanup: async (id) => {
      env.systemd.units.get(`bcd-ch-${id}.service`)?.vmm.kill();
      await Deno.remove(env.rt.instanceDir(id), { recursive: true }).catch((e) => {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      });
    },
    close: env.close,
  };
});
