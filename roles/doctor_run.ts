/**
 * The checks of `bcd-node doctor` and `bcd-site doctor` (`roles/doctor_cli.ts` says what they print and how they
 * exit), loaded when the subcommand runs: the daemon's start never needs `core/doctor` or the probes here (issue 24).
 *
 * @module
 */
import type { KindRole } from "../core/commands/kinds.ts";
import { bcd, decodeMessage } from "../proto/mod.ts";
import {
  check,
  clockCheck,
  configCheck,
  diskCheck,
  DOCTOR_EXIT,
  type DoctorCheck,
  doctorReport,
  gatewayCheck,
  helperCheck,
  type HelperFound,
  hostChecks,
  type HostFacts,
  identityCheck,
  journalChecks,
  type JournalFound,
  releaseCheck,
  renderDoctorText,
  trustCheck,
} from "../core/doctor/mod.ts";
import { ConfigError, loadAgentConfig, type ResolvedAgentConfig } from "../core/config/mod.ts";
import { DEFAULT_HELPER_SOCKET, HelperError } from "../core/helper/mod.ts";
import { boundsFromConfig, JournalError } from "../core/journal/mod.ts";
import { inspectJournal, journalHealth } from "../core/journal/inspect.ts";
import { IdentityError, loadIdentity, type NodeIdentity } from "../core/session/identity.ts";
import { HelperClient } from "../runtimes/helper/client.ts";
import { probeGateway } from "../runtimes/doctor/gateway_probe.ts";
import { toolVersion } from "../runtimes/doctor/tool_version.ts";
import { configAndDataDir } from "./_agent_cli.ts";
import { AGENT_VERSION } from "../core/version.ts";
import type { ReleaseState } from "../core/daemon/ports.ts";
import { printOut, UsageError } from "./_cli.ts";

/** A damaged SQLite file, as the journal's own open tells one (`core/journal/open.ts`). */
const _DAMAGE = /not a database|malformed|corrupt|file is encrypted|disk image/i;

async function _config(
  values: Record<string, unknown>,
  defaultDataDir: string,
): Promise<{ config: ResolvedAgentConfig; dataDir: string; line: DoctorCheck }> {
  try {
    const { config, dataDir, path } = await configAndDataDir(values, { defaultDataDir });
    return { config, dataDir, line: configCheck(path !== undefined ? { path } : {}) };
  } catch (e) {
    if (!(e instanceof UsageError || e instanceof ConfigError)) throw e;
    const dataDir = (values["data-dir"] as string | undefined) ?? defaultDataDir;
    return { config: loadAgentConfig(""), dataDir, line: configCheck({ error: e.message }) };
  }
}

async function _identity(role: string, dataDir: string): Promise<{ identity?: NodeIdentity; lines: DoctorCheck[] }> {
  let identity: NodeIdentity | undefined;
  try {
    identity = await loadIdentity(dataDir);
  } catch (e) {
    if (e instanceof IdentityError || e instanceof SyntaxError) {
      return { lines: [identityCheck(role, { error: e.message })] };
    }
    if (e instanceof Deno.errors.PermissionDenied || e instanceof Deno.errors.NotCapable) {
      return { lines: [identityCheck(role, { error: `${dataDir} cannot be read by this user: ${e.message}` })] };
    }
    throw e;
  }
  if (identity === undefined) return { lines: [identityCheck(role, { missing: dataDir })] };
  const lines = [identityCheck(role, { nodeId: identity.nodeId, gatewayUrl: identity.gatewayUrl })];
  try {
    const tb = identity.trustBundle.length === 0
      ? undefined
      : decodeMessage(bcd.v1.TrustBundle, identity.trustBundle, { maxBytes: 256 * 1024 });
    lines.push(trustCheck({
      version: Number(tb?.version ?? 0),
      commandSigningRoots: tb?.command_signing_roots?.length ?? 0,
      approverKeys: tb?.approver_keys?.length ?? 0,
    }));
  } catch (e) {
    if (!(e instanceof Error)) throw e;
    lines.push(trustCheck({ error: e.message }));
  }
  return { identity, lines };
}

async function _helper(
  role: KindRole,
  config: ResolvedAgentConfig,
): Promise<{ found: HelperFound; facts?: HostFacts }> {
  const socket = config.helper.socket ?? DEFAULT_HELPER_SOCKET;
  const helper = new HelperClient({ socket });
  try {
    await helper.connect();
    try {
      const facts = await helper.call("host.doctor", {});
      return { found: { socket, serves: facts.role, facts: true }, facts };
    } catch (e) {
      if (e instanceof HelperError && (e.code === "unknown-op" || e.code === "not-allowed")) {
        return { found: { socket, serves: config.helper.role ?? role, facts: false } };
      }
      throw e;
    }
  } catch (e) {
    if (!(e instanceof HelperError)) throw e;
    return { found: { socket, error: e.detail } };
  } finally {
    helper.close();
  }
}

async function _journal(dataDir: string, config: ResolvedAgentConfig): Promise<{ found: JournalFound; mark: number }> {
  try {
    const bounds = boundsFromConfig(config.journal);
    const health = await journalHealth(dataDir);
    const v = await inspectJournal(dataDir, { bounds }) as {
      lock: { held: boolean; holder?: string };
      bounds: { used_events: number; max_unacked_events: number; used_bytes: number; max_bytes: number };
    };
    return {
      found: {
        dataDir,
        integrity: health.integrity,
        lockHolder: v.lock.held ? (v.lock.holder ?? "another process") : null,
        usedEvents: v.bounds.used_events,
        maxEvents: v.bounds.max_unacked_events,
        usedBytes: v.bounds.used_bytes,
        maxBytes: v.bounds.max_bytes,
      },
      mark: health.serverTimeMark,
    };
  } catch (e) {
    if (e instanceof JournalError && e.reason === "no-journal") return { found: { dataDir, missing: true }, mark: 0 };
    if (e instanceof Deno.errors.PermissionDenied || e instanceof Deno.errors.NotCapable) {
      return { found: { dataDir, error: e.message }, mark: 0 };
    }
    if (e instanceof Error && _DAMAGE.test(e.message)) return { found: { dataDir, error: e.message }, mark: 0 };
    throw e;
  }
}

/** The helper's record of the releases (`daemon.status`). */
async function _release(config: ResolvedAgentConfig): Promise<ReleaseState | { error: string }> {
  const helper = new HelperClient({ socket: config.helper.socket ?? DEFAULT_HELPER_SOCKET });
  try {
    await helper.connect();
    return await helper.call("daemon.status", {});
  } catch (e) {
    if (!(e instanceof HelperError)) throw e;
    return { error: e.detail };
  } finally {
    helper.close();
  }
}

/** The node's own tools (it runs them itself, not through the helper): qemu-img, and nvidia-smi for queries. */
async function _nodeTools(config: ResolvedAgentConfig, facts: HostFacts | undefined): Promise<DoctorCheck[]> {
  const out: DoctorCheck[] = [];
  const runtime = facts !== undefined && (facts.tools.virsh !== null || facts.tools["cloud-hypervisor"] !== null);
  const qemuImg = await toolVersion("qemu-img", ["--version"]);
  if (qemuImg !== null) out.push(check("qemu-img", "ok", qemuImg));
  else if (runtime) {
    out.push(check(
      "qemu-img",
      "fail",
      "qemu-img is not installed: instance overlays and image checks cannot run",
      "install qemu-utils",
    ));
  }
  const smi = await toolVersion(config.devices.nvidiaSmi, ["-L"]);
  out.push(
    smi !== null ? check("nvidia-smi", "ok", smi) : check(
      "nvidia-smi",
      "ok",
      `no ${config.devices.nvidiaSmi}: a host without NVIDIA GPUs (GPU kinds fail no-gpu-driver)`,
    ),
  );
  return out;
}

/** Runs the checks of `role` and prints them; the exit code. */
export async function runDoctor(
  role: "node" | "site",
  defaultDataDir: string,
  values: Record<string, unknown>,
): Promise<number> {
  const { config, dataDir, line } = await _config(values, defaultDataDir);
  const checks: DoctorCheck[] = [line];
  const { identity, lines } = await _identity(role, dataDir);
  checks.push(...lines);
  const helper = await _helper(role, config);
  checks.push(helperCheck(role, config.helper.role, helper.found));
  const journal = await _journal(dataDir, config);
  checks.push(...journalChecks(journal.found));
  if (helper.facts) checks.push(diskCheck(helper.facts, config.journal.maxBytes));
  if (helper.facts) checks.push(releaseCheck(AGENT_VERSION, await _release(config)));
  checks.push(clockCheck(Date.now(), journal.mark));
  const url = (values.gateway as string | undefined) ?? config.gateway.url ?? identity?.gatewayUrl;
  const caCerts = config.gateway.caFile ? [await Deno.readTextFile(config.gateway.caFile)] : undefined;
  checks.push(gatewayCheck(url === undefined ? { url } : await probeGateway(url, caCerts ? { caCerts } : {})));
  if (role === "node") {
    if (helper.facts) checks.push(...hostChecks(helper.facts));
    checks.push(...await _nodeTools(config, helper.facts));
  }
  const report = doctorReport(role, checks);
  printOut(values.json ? JSON.stringify(report) : renderDoctorText(report));
  return DOCTOR_EXIT[report.worst];
}
