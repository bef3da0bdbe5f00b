/**
 * The sim role's simulated host: a fixed two-socket HGX-class machine for `inventory.refresh`, and a rebooter that
 * "reboots" by ending the process with {@link SIM_REBOOT_EXIT}; whatever supervises the sim (the demo, the e2e
 * harness) starts it again with a new boot id.
 *
 * @module
 */
import type { HostInventory, HostInventoryReader, Rebooter } from "../../core/commands/kind_handlers/mod.ts";

/** The exit status a simulated reboot ends the process with. */
export const SIM_REBOOT_EXIT = 75;

const GiB = 1024 ** 3;

/** A simulated host's inventory (its boot id is the sim's current one). */
export function simHostInventory(hostname: string, bootId: string): HostInventory {
  return {
    hostname,
    boot_id: bootId,
    kernel: "6.1.0-sim",
    os_release: "bcd simulated host",
    system_vendor: "bcd",
    system_product: "sim-hgx-8",
    system_serial: `SIM-${hostname}`,
    cpu: { model: "Simulated Xeon 8480", sockets: 2, cores: 112, threads: 224, flags: ["vmx", "avx512f"] },
    memory_bytes: 2048 * GiB,
    numa_nodes: [
      { id: 0, cpus: "0-55,112-167", memory_bytes: 1024 * GiB },
      { id: 1, cpus: "56-111,168-223", memory_bytes: 1024 * GiB },
    ],
    disks: [
      { name: "nvme0n1", model: "SimNVMe 3.84TB", serial: "SIMDISK0", size_bytes: 3840 * 1e9, transport: "nvme" },
      { name: "nvme1n1", model: "SimNVMe 3.84TB", serial: "SIMDISK1", size_bytes: 3840 * 1e9, transport: "nvme" },
    ],
    nics: [{ name: "eth0", mac: "02:00:00:00:00:01", speed_mbps: 100_000, driver: "sim", link_up: true }],
  };
}

/** The simulated host's inventory reader. */
export function simHostReader(hostname: string, bootId: string): HostInventoryReader {
  return { read: () => Promise.resolve(simHostInventory(hostname, bootId)) };
}

/** Ends the process with {@link SIM_REBOOT_EXIT} once the request is logged (the journal already holds `running`). */
export function simRebooter(beforeExit: () => Promise<void> = () => Promise.resolve()): Rebooter {
  return {
    async reboot(_reason: string) {
      await beforeExit();
      // A short delay lets the RUNNING update leave the socket, as a real shutdown would.
      setTimeout(() => Deno.exit(SIM_REBOOT_EXIT), 50);
    },
  };
}

/**
 * The simulated host's boot id file, `<data dir>/boot_id`, made with a fresh id when absent. A simulated reboot is
 * a new id written there by whatever supervises the sim.
 */
export async function simBootIdFile(dataDir: string): Promise<string> {
  const path = `${dataDir}/boot_id`;
  try {
    await Deno.writeTextFile(path, crypto.randomUUID() + "\n", { createNew: true });
  } catch (e) {
    if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
  }
  return path;
}
