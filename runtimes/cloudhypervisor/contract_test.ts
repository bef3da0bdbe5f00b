/**
 * The shared `InstanceRuntime` contract (`runtimes/instance_runtime_contract_testing.ts`, the suite `libvirt-kvm` runs
 * too) against the `cloud-hypervisor` runtime over the fake VMM, fake systemd and fake taps. cloud-hypervisor is not
 * packaged for these machines, so there is no real backend to run it against.
 */
import { instanceRuntimeContract } from "../instance_runtime_contract_testing.ts";
import { startTestHelper } from "../helper/helper_testing.ts";
import { chTestEnv, type ChTestOptions } from "./ch_testing.ts";
import { HelperChHost } from "./helper_port.ts";

const VIA_HELPER: ChTestOptions = {
  port: async (host) => {
    const helper = await startTestHelper({ ch: host });
    return { port: new HelperChHost(helper.client), close: () => helper.close() };
  },
};

for (
  const [label, opts] of [
    ["fake VMM, fake systemd", {}],
    ["fake VMM, fake systemd, through the root helper's ch.* ops", VIA_HELPER],
  ] as const
) register(label, opts);

function register(label: string, opts: ChTestOptions): void {
  instanceRuntimeContract("cloud-hypervisor", label, async () => {
    const env = await chTestEnv(opts);
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
      volumes: {
        dir: `${env.dataDir}/volumes`,
        attached: async (id) => {
          const vmm = env.systemd.units.get(`bcd-ch-${id}.service`)?.vmm;
          const disks = (await env.rt.api(id).info()).config.disks ?? [];
          return disks.filter((d) => d.path?.startsWith(`${env.dataDir}/volumes/`)).map((d) => ({
            path: d.path!,
            serial: d.serial ?? "",
            readOnly: d.readonly === true,
            ...(d.id && vmm?.diskSizes.has(d.id) ? { resizedTo: vmm.diskSizes.get(d.id) } : {}),
          }));
        },
      },
      // The guest's use is the VMM's anonymous memory, read from the unit's cgroup (a scratch tree here).
      balloon: { setGuestUse: env.setGuestUse },
      rebind: {
        // The fake VMM's guest answers a rebind disk hot-added to it running (fake_vmm.ts), as the guest half does.
        answerNext: (id) => {
          const vmm = env.systemd.units.get(`bcd-ch-${id}.service`)?.vmm;
          if (vmm) vmm.guest.answersRebind = true;
          return {
            seen: () => {
              if (vmm) vmm.guest.answersRebind = false;
              const d = vmm?.hotAdded.findLast((d) => d.id === "vdz" || d.serial === "bc-rebind");
              return Promise.resolve(
                d ? { target: d.id ?? "", serial: d.serial ?? "", path: d.path ?? "" } : undefined,
              );
            },
          };
        },
        attached: async (id) => {
          const i = await env.rt.api(id).info();
          return (i.config.disks ?? []).some((d) => d.id === "vdz") || Object.hasOwn(i.device_tree ?? {}, "vdz");
        },
      },
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
}
