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
import { libvirtBackend, libvirtOwnershipFacts, probeDomainType } from "../runtimes/libvirt/host_setup.ts";
import { chBackend } from "../runtimes/cloudhypervisor/host_setup.ts";
import { NvidiaSmi } from "../runtimes/nvidia/nvidia_smi.ts";
import { RealHostDoctor } from "../runtimes/helper/doctor_facts.ts";
import { HelperUpgrader } from "../runtimes/daemon/helper_upgrader.ts";
import { ReleaseStore } from "../runtimes/daemon/release_store.ts";
import { signalSupervisedAgent, systemdRestart } from "../runtimes/daemon/restart.ts";
import { supervise } from "../runtimes/daemon/supervisor.ts";
import { AGENT_DENO_DIR, AGENT_USER, cacheDirOwner, warmCodeCache } from "../runtimes/daemon/code_cache.ts";
import { passwdIdentity } from "../runtimes/helper/plugin_user.ts";
import { systemdRuns } from "../runtimes/helper/host_backends.ts";
import { readIdentity } from "../core/journal/mod.ts";
import { releaseKeysFromWire } from "../core/session/identity.ts";
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
        dynamicOwnership: config.helper.libvirtDynamicOwnership,
        ...(gid !== undefined ? { nodeGid: gid } : {}),
        hostGpus: async () =>
          (await new NvidiaSmi({ binary: config.devices.nvidiaSmi }).query()).gpus.map((g) => g.pciBusId),
      })
      : undefined;
    const ch = role === "node"
      ? await chBackend(config.dataDir, {
        log,
        bridges: config.helper.instanceBridges,
        hostGpus: async () =>
          (await new NvidiaSmi({ binary: config.devices.nvidiaSmi }).query()).gpus.map((g) => g.pciBusId),
        busyGpus: async () => (await host.holds.list()).holds.flatMap((h) => h.devices.map((d) => d.gpuUuid)),
      })
      : undefined;
    const doctor = new RealHostDoctor({
      role,
      dataDir: namesDataDir ? config.dataDir : _AGENT_DATA_DIR[role],
      cgroupRoot: config.devices.cgroupRoot,
      bridges: config.helper.instanceBridges,
      kvm: () => probeDomainType(),
      ...(role === "node"
        ? {
          libvirtOwnership: () =>
            libvirtOwnershipFacts({
              dynamicOwnership: config.helper.libvirtDynamicOwnership,
              dataDir: config.dataDir,
              ...(gid !== undefined ? { nodeGid: gid } : {}),
            }),
        }
        : {}),
    });
    const agentDataDir = namesDataDir ? config.dataDir : _AGENT_DATA_DIR[role];
    const daemon = role === "ramdisk" ? undefined : new HelperUpgrader({
      store: new ReleaseStore(config.daemon.releasesDir, log),
      agentDataDir,
      releaseKeys: () => _releaseKeys(config, agentDataDir),
      restart: () => systemdRuns() ? systemdRestart(role) : signalSupervisedAgent(config.daemon.releasesDir),
      // Under the packaged units the agent runs as bcd with its DENO_DIR in /var/cache/bcd: warm that before the
      // restart. A supervised agent gets the same DENO_DIR from its launcher when it runs as that dir's owner: warm it
      // as the owner where the dir exists (elsewhere it keeps Deno's default and compiles at its start).
      ...(systemdRuns()
        ? {
          warm: async () =>
            await warmCodeCache({
              releasesDir: config.daemon.releasesDir,
              role,
              ...await passwdIdentity(AGENT_USER),
              denoDir: AGENT_DENO_DIR,
            }),
        }
        : {
          warm: async () => {
            const owner = await cacheDirOwner(AGENT_DENO_DIR);
            if (owner === null) return log.info({ dir: AGENT_DENO_DIR }, "daemon: no agents' cache dir to warm");
            await warmCodeCache({ releasesDir: config.daemon.releasesDir, role, ...owner, denoDir: AGENT_DENO_DIR });
          },
        }),
      confirmTimeoutMs: config.daemon.confirmTimeoutMs,
      log,
    });
    await daemon?.start();
    const backends = {
      ...host,
      ...(libvirt ? { libvirt } : {}),
      ...(ch ? { ch } : {}),
      doctor,
      ...(daemon ? { daemon } : {}),
    };
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
    daemon?.stop();
    await listener.close();
    Deno.removeSignalListener("SIGTERM", stop);
    Deno.removeSignalListener("SIGINT", stop);
    return EXIT_OK;
  },
};

/**
 * The release keys root trusts: `[daemon] release_keys` when set (root's own pin), else the trust bundle the agent
 * keeps in its `identity.json` (written by the unprivileged agent: set the pin where that matters).
 */
async function _releaseKeys(config: ResolvedAgentConfig, agentDataDir: string): Promise<Uint8Array[]> {
  if (config.daemon.releaseKeys.length > 0) return config.daemon.releaseKeys;
  const tb = (await readIdentity(agentDataDir))?.trust_bundle;
  return typeof tb === "string" ? releaseKeysFromWire(Uint8Array.from(atob(tb), (c) => c.charCodeAt(0))) : [];
}

/** `bcd-helper supervise`. */
const SUPERVISE: Subcommand = {
  summary: "where no systemd runs: run <releases_dir>/current/bcd-<role> ARGS (after --) and start it again when it " +
    "ends, so a self-update's swap or rollback takes effect; --user runs it as that user (setpriv)",
  options: { role: { type: "string" }, config: { type: "string" }, user: { type: "string" } },
  positionals: true,
  async run({ values, positionals }) {
    const { config } = await _config(values.config as string | undefined);
    const role = (values.role as string | undefined) ?? config.helper.role ?? DEFAULT_HELPER_ROLE;
    if (!["node", "site"].includes(role)) throw new UsageError(`supervise: --role ${role} is not node or site`);
    const user = values.user as string | undefined;
    if (user !== undefined && !/^[a-z_][a-z0-9_-]{0,31}$/.test(user)) throw new UsageError(`--user ${user}`);
    const log = createLogger({ level: levelFromEnv(config.log.level), base: { role: "supervise" } });
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    Deno.addSignalListener("SIGTERM", onSignal);
    Deno.addSignalListener("SIGINT", onSignal);
    await supervise({
      releasesDir: config.daemon.releasesDir,
      role,
      args: positionals,
      ...(user !== undefined ? { user } : {}),
      log,
      signal: stop.signal,
    });
    Deno.removeSignalListener("SIGTERM", onSignal);
    Deno.removeSignalListener("SIGINT", onSignal);
    return EXIT_OK;
  },
};

/** The helper's subcommands beyond `version` and `help`. */
export const COMMANDS: Record<string, Subcommand> = { serve: SERVE, supervise: SUPERVISE };

if (import.meta.main) {
  Deno.exit(await runCli("helper", Deno.args, COMMANDS));
}
