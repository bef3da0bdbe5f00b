/**
 * `guest turns`: the turn/drain protocol agent of seed 001, served on `--tcp HOST:PORT`, `--unix PATH`,
 * `--device PATH` (virtio-serial port, hvc or serial tty; each flag may repeat) and `--stdio` (a device the init
 * hands over as standard input and output: Deno 2 reserves `/dev` to `--allow-all`, so under the guest role's own
 * flags this is how a VM's port is served). Deno has no AF_VSOCK, so vsock is not served; the host reaches the
 * agent over TCP on the guest network or a virtio-serial port. Native mode
 * runs `--turn-cmd` once per `RunTurn` (the turn id in `SLEEPWALK_TURN_ID`); wrap mode supervises `--wrap-cmd`
 * (or `SLEEPWALK_WRAP_CMD`, or `/etc/sleepwalk/wrap-cmd`) and exits with its status when it exits.
 *
 * Channel authentication (issue 21): `--channel-key-file PATH` (else `/etc/bcd/channel-key` when it exists) holds
 * the VM's key as 64 hex digits, delivered by the host through the seed ISO (or `bcd.channel_key=` on the kernel
 * command line, which the init copies into a 0600 file: `/proc/cmdline` is readable by every guest process, so the
 * seed ISO is the better carrier). With a key every connection must prove it (`core/turns/auth.ts`). TCP is off
 * unless asked for with `--tcp`, and `--tcp` is refused without a key: the guest network is not trusted. After a
 * proven restore the guest sets its clock from the host's (`date -u -s @SECONDS`).
 *
 * @module
 */
import fs from "node:fs";
import { EXIT_OK, type Subcommand, UsageError } from "./_cli.ts";
import { createLogger, levelFromEnv } from "../core/log/mod.ts";
import { AGENT_VERSION } from "../core/version.ts";
import { ModeConfigError, resolveMode } from "../guest/turns/config.ts";
import { TurnsAgent } from "../guest/turns/agent.ts";
import {
  deviceConnections,
  listenTcp,
  listenUnix,
  parseHostPort,
  stdioConnections,
  type TurnsListener,
} from "../guest/turns/transport.ts";
import { resolveVmId, VmIdError } from "../guest/turns/vm_id.ts";
import { channelKeyFromFile, DEFAULT_CHANNEL_KEY_FILE } from "./guest_channel_key.ts";

/**
 * Sets the wall clock with `date -u -s @SECONDS` (the guest agent runs as root in its VM), rounded to the second:
 * busybox's `date` takes no fraction, and a restored guest's clock is off by the whole time it was saved.
 */
async function _setClock(ns: bigint): Promise<void> {
  const sec = (ns + 500_000_000n) / 1_000_000_000n;
  const out = await new Deno.Command("date", { args: ["-u", "-s", `@${sec}`], stdout: "null", stderr: "piped" })
    .output();
  if (!out.success) throw new Error(`date -s failed: ${new TextDecoder().decode(out.stderr).trim()}`);
}

function _strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((s): s is string => typeof s === "string") : [];
}

function _str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

function _env(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch (e) {
    if (e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied) return undefined;
    throw e;
  }
}

function _readFile(path: string): string | null {
  try {
    return Deno.readTextFileSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

/** Refuses up front a device Deno will not open under these flags (it reserves most of `/dev` to --allow-all). */
function _checkDevice(path: string): void {
  try {
    fs.closeSync(fs.openSync(path, fs.constants.O_RDWR | fs.constants.O_NOCTTY | fs.constants.O_NONBLOCK));
  } catch (e) {
    if (e instanceof Deno.errors.NotCapable) {
      throw new UsageError(
        `turns: --device ${path}: Deno lets only --allow-all open it; let the init hand it over with --stdio`,
      );
    }
    if (e instanceof Deno.errors.NotFound || (e as { code?: unknown }).code === "ENOENT") {
      throw new UsageError(`turns: --device ${path} does not exist`);
    }
    throw e;
  }
}

/** `guest turns`. */
export const turnsCmd: Subcommand = {
  summary: "serve the turn/drain protocol (NDJSON) on --tcp/--unix/--device/--stdio; native (--turn-cmd) or wrap",
  options: {
    tcp: { type: "string", multiple: true },
    unix: { type: "string", multiple: true },
    device: { type: "string", multiple: true },
    stdio: { type: "boolean" },
    "vm-id": { type: "string" },
    "turn-cmd": { type: "string" },
    "wrap-cmd": { type: "string" },
    "wrap-start": { type: "string" },
    "wrap-end": { type: "string" },
    "wrap-await-secrets": { type: "boolean" },
    "config-dir": { type: "string" },
    "max-line-bytes": { type: "string" },
    "channel-key-file": { type: "string" },
  },
  run: async ({ values }) => {
    const log = createLogger({ level: levelFromEnv("info"), base: { role: "guest", cmd: "turns" } });
    let mode, vm;
    try {
      mode = resolveMode({
        turnCmd: _str(values["turn-cmd"]),
        wrapCmd: _str(values["wrap-cmd"]),
        wrapStart: _str(values["wrap-start"]),
        wrapEnd: _str(values["wrap-end"]),
        wrapAwaitSecrets: values["wrap-await-secrets"] === true,
        configDir: _str(values["config-dir"]),
      }, { env: _env, readFile: _readFile });
      vm = await resolveVmId(_str(values["vm-id"]));
    } catch (e) {
      if (e instanceof ModeConfigError || e instanceof VmIdError) throw new UsageError(`turns: ${e.message}`);
      throw e;
    }
    const maxRaw = _str(values["max-line-bytes"]);
    const maxLineBytes = maxRaw === undefined ? undefined : Number(maxRaw);
    if (maxLineBytes !== undefined && (!Number.isSafeInteger(maxLineBytes) || maxLineBytes < 64)) {
      throw new UsageError(`turns: --max-line-bytes must be an integer ≥ 64, got "${maxRaw}"`);
    }
    const tcp = _strings(values.tcp).map((hp) => {
      try {
        return parseHostPort(hp);
      } catch (e) {
        throw new UsageError(`turns: --tcp ${(e as Error).message}`);
      }
    });
    const channelKey = channelKeyFromFile(_str(values["channel-key-file"]), "turns");
    if (tcp.length > 0 && channelKey === undefined) {
      throw new UsageError(
        `turns: --tcp needs a channel key (--channel-key-file, or ${DEFAULT_CHANNEL_KEY_FILE}): the guest network is not trusted`,
      );
    }
    const listeners: TurnsListener[] = [];
    for (const addr of tcp) listeners.push(listenTcp(addr.hostname, addr.port));
    for (const p of _strings(values.unix)) listeners.push(listenUnix(p));
    for (const p of _strings(values.device)) {
      _checkDevice(p);
      listeners.push(deviceConnections(p, log));
    }
    if (values.stdio === true) listeners.push(stdioConnections(log));
    if (listeners.length === 0) throw new UsageError("turns: give at least one of --tcp, --unix, --device, --stdio");
    log.info(
      { event: "turns_start", vm_id: vm.vmId, vm_id_source: vm.source, mode: mode.kind, authenticated: !!channelKey },
      "guest turns",
    );
    if (channelKey === undefined) {
      log.warn(
        { event: "turns_unauthenticated" },
        "no channel key: connections are not authenticated, none can resume",
      );
    }
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    Deno.addSignalListener("SIGTERM", onSignal);
    Deno.addSignalListener("SIGINT", onSignal);
    try {
      const agent = new TurnsAgent({
        vmId: vm.vmId,
        guestdVersion: AGENT_VERSION,
        mode,
        listeners,
        logger: log,
        maxLineBytes,
        signal: stop.signal,
        channelKey,
        setClock: _setClock,
      });
      const code = await agent.run();
      return code === 0 ? EXIT_OK : code;
    } finally {
      Deno.removeSignalListener("SIGTERM", onSignal);
      Deno.removeSignalListener("SIGINT", onSignal);
      for (const l of listeners) l.close();
    }
  },
};
