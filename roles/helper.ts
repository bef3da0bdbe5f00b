/**
 * `bcd-helper`: the agents' root helper (000 §privilege separation). It runs as root beside an unprivileged
 * `bcd-node`, `bcd-site` or `bcd-ramdisk` and answers that agent's requests on a unix socket (`[helper] socket`,
 * default `/run/bcd/helper.sock`; mode 0660 and group `[helper] node_group`, in a 0750 directory of its own: it refuses to start when that directory exists and is not root's alone, see `runtimes/helper/socket_dir.ts`). `[helper] role`
 * (default `node`) names the agent it serves and so the ops it answers (`core/helper/roles.ts`): for the node the boot
 * id, the host inventory and memory, GPUs' NUMA nodes, the CDI/env hold files, the hold slices, `gpu.reset` and
 * `node.reboot`; for a site the boot id, the inventory and `node.reboot`; for a ramdisk the boot id and the inventory.
 * Every other op is refused `not-allowed`; every request is checked default-deny (`core/helper`) and logged with its
 * arguments. Wiring only: the runtimes are `runtimes/helper`'s.
 *
 * usage: bcd-helper serve [--socket PATH] [--config FILE] | version | help
 *
 * @module
 */
import { ConfigError, loadAgentConfig, type ResolvedAgentConfig } from "../core/config/mod.ts";
import { DEFAULT_HELPER_ROLE, DEFAULT_HELPER_SOCKET, HELPER_OPS_BY_ROLE } from "../core/helper/mod.ts";
import { createLogger, levelFromEnv } from "../core/log/mod.ts";
import { groupId, HelperServer, hostBackends, SocketDirRefused } from "../runtimes/helper/mod.ts";
import { libvirtBackend, probeDomainType } from "../runtimes/libvirt/host_setup.ts";
import { NvidiaSmi } from "../runtimes/nvidia/nvidia_smi.ts";
import { RealHostDoctor } from "../runtimes/helper/doctor_facts.ts";
import type { KindRole } from "../core/commands/kinds.ts";
import { parse as parseToml } from "smol-toml";
import { EXIT_OK, runCli, StartRefused, type Subcommand, UsageError } from "./_cli.ts";

/** The data dir of each agent role when the config names none (the roles' own defaults). */
const _AGENT_DATA_DIR: Readonly<Record<KindRole, string>> = {
  node: "/var/lib/bcd",
  site: "/var/lib/bcd-site",
  ramdisk: "/run/bcd",
};

/** The config file: `--config`, else `BCD_CONFIG`, else `/etc/bcd/config.toml` when it exists, else the defaults. */
async function _config(path: string | undefined): Promise<{ config: ResolvedAgentConfig; namesDataDir: boolean }> {
  const p = path ?? Deno.env.get("BCD_CONFIG");
  let text = "";
  try {
    text = await Deno.readTextFile(p ?? "/etc/bcd/config.toml");
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    if (p !== undefined) throw new UsageError(`config file ${p} does not exist`);
  }
  try {
    return {
      config: loadAgentConfig(text),
      namesDataDir: typeof (parseToml(text) as { data_dir?: unknown }).data_dir === "string",
    };
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(`${p ?? "/etc/bcd/config.toml"}: ${e.message}`, { cause: e });
    throw e;
  }
}

/** `bcd-helper serve`. */
const SERVE: Subcommand = {
  summary: "serve the agent's requests ([helper] role: node, site or ramdisk) on a unix socket, as root, until SIGTERM",
  options: { socket: { type: "string" }, config: { type: "string" } },
  async run({ values }) {
    const { config, namesDataDir } = await _config(values.config as string | undefined);
    const socket = (values.socket as string | undefined) ?? config.helper.socket ?? DEFAULT_HELPER_SOCKET;
    if (!socket.startsWith("/")) throw new UsageError(`--socket ${socket} must be an absolute path`);
    let gid: number | undefined;
    if (config.helper.nodeGroup !== undefined) {
      try {
        gid = await groupId(config.helper.nodeGroup);
      } catch (e) {
        if (e instanceof RangeError) throw new UsageError(`[helper] node_group: ${e.message}`);
        throw e;
      }
    }
    const log = createLogger({ level: levelFromEnv(config.log.level), base: { role: "helper" } });
    const role = config.helper.role ?? DEFAULT_HELPER_ROLE;
    const host = hostBackends(config, { bootIdPath: Deno.env.get("BCD_BOOT_ID_PATH"), log });
    const libvirt = role === "node"
      ? await libvirtBackend(config.dataDir, {
        log,
        bridges: config.helper.instanceBridges,
        hostGpus: async () =>
          (await new NvidiaSmi({ binary: config.devices.nvidiaSmi }).query()).gpus.map((g) => g.pciBusId),
      })
      : undefined;
    const doctor = new RealHostDoctor({
      role,
      dataDir: namesDataDir ? config.dataDir : _AGENT_DATA_DIR[role],
      cgroupRoot: config.devices.cgroupRoot,
      bridges: config.helper.instanceBridges,
      kvm: () => probeDomainType(),
    });
    const backends = { ...host, ...(libvirt ? { libvirt } : {}), doctor };
    const server = new HelperServer(backends, { log, role });
    let listener;
    try {
      listener = await server.listen(socket, { gid });
    } catch (e) {
      if (e instanceof SocketDirRefused) throw new StartRefused(e.message, { cause: e });
      throw e;
    }
    const stop = () => void listener.close();
    Deno.addSignalListener("SIGTERM", stop);
    Deno.addSignalListener("SIGINT", stop);
    log.info(
      {
        socket,
        serves: role,
        ops: HELPER_OPS_BY_ROLE[role],
        cdi_dir: config.devices.cdiDir,
        run_dir: config.devices.runDir,
        cgroup_root: config.devices.cgroupRoot,
        ssh_dir: config.access.sshDir,
      },
      "helper started",
    );
    await listener.done;
    await listener.close();
    Deno.removeSignalListener("SIGTERM", stop);
    Deno.removeSignalListener("SIGINT", stop);
    return EXIT_OK;
  },
};

/** The helper's subcommands beyond `version` and `help`. */
export const COMMANDS: Record<string, Subcommand> = { serve: SERVE };

if (import.meta.main) {
  Deno.exit(await runCli("helper", Deno.args, COMMANDS));
}
