/**
 * From a `bmc.*` payload's `BmcTarget` to a logged-in {@link RedfishClient}: the target is checked (a host name or
 * address, a port, a credential reference, a pin that is a PEM certificate or 64 hex digits), the host is recorded in
 * `bmc-hosts.json` before anything is sent to it, and the credentials come through the session's SecretRequest
 * broker (purpose `bmc-credential`, bound to the command). A credential secret is JSON `{"username": "...",
 * "password": "..."}` of at most 4 KiB (the username may be absent for a new password of `bmc.rotate`); it is never
 * logged, never part of a result, and dropped when the command ends.
 *
 * @module
 */
import type { Clock } from "../../core/clock.ts";
import { CommandFailed, InvalidPayload } from "../../core/commands/rejection.ts";
import type { SecretSource } from "../../core/converge/instances/user_data.ts";
import type { bcd } from "../../proto/mod.ts";
import type { BmcHostBook } from "./bmc_hosts.ts";
import { RedfishClient, type RedfishClientOptions, type RedfishCredentials } from "./client.ts";

/** The purpose of a BMC credential's SecretRequest. */
export const BMC_CREDENTIAL_PURPOSE = "bmc-credential";
/** The largest credential secret read. */
export const MAX_CREDENTIAL_BYTES = 4096;

/** What the `bmc.*` handlers share. */
export interface BmcPorts {
  readonly secrets: SecretSource;
  readonly hosts: BmcHostBook;
  readonly clock?: Pick<Clock, "setTimer" | "sleep" | "monotonic">;
  /** Client settings (tests shorten the per-request time). */
  readonly client?: Partial<Pick<RedfishClientOptions, "timeoutMs" | "maxResponseBytes" | "auth">>;
}

type Target = bcd.v1.BmcTarget.$Properties;

/** A checked target. */
export interface CheckedTarget {
  readonly host: string;
  readonly port: number;
  readonly credentialRef: string;
  readonly systemId: string;
  readonly caPem?: string;
  readonly certSha256?: string;
}

/** Checks a payload's target; `InvalidPayload` names what is wrong. */
export function checkTarget(t: Target | null | undefined): CheckedTarget {
  if (!t) throw new InvalidPayload("the payload has no target");
  const host = t.host ?? "";
  const ip6 = /^\[?[0-9a-fA-F:.]+\]?$/.test(host) && host.includes(":");
  if (!ip6 && !/^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*\.?$/.test(host)) {
    throw new InvalidPayload(`target.host ${JSON.stringify(host)} is not a host name or address`);
  }
  const port = t.port ?? 0;
  if (port > 65535) throw new InvalidPayload(`target.port ${port} is not a TCP port`);
  const credentialRef = t.credential_ref ?? "";
  if (credentialRef === "") throw new InvalidPayload("target.credential_ref is empty");
  const sha = (t.cert_sha256 ?? "").toLowerCase();
  if (sha !== "" && !/^[0-9a-f]{64}$/.test(sha)) {
    throw new InvalidPayload(`target.cert_sha256 ${JSON.stringify(t.cert_sha256)} is not 64 hex digits`);
  }
  const ca = t.ca_pem ?? "";
  if (ca !== "" && !ca.includes("-----BEGIN CERTIFICATE-----")) {
    throw new InvalidPayload("target.ca_pem is not a PEM certificate");
  }
  const systemId = t.system_id ?? "";
  if (!/^[A-Za-z0-9._:-]{0,128}$/.test(systemId)) {
    throw new InvalidPayload(`target.system_id ${JSON.stringify(systemId)} is not a Redfish id`);
  }
  return {
    host: host.replace(/^\[|\]$/g, ""),
    port: port || 443,
    credentialRef,
    systemId,
    ...(ca ? { caPem: ca } : {}),
    ...(sha ? { certSha256: sha } : {}),
  };
}

/** The lock key of a BMC: one command acts on a BMC at a time. */
export function bmcLock(t: CheckedTarget): string {
  return `bmc:${t.host.toLowerCase()}:${t.port}`;
}

/** Fetches a credential secret bound to `commandId`; fails `bmc-credential-*` without it. */
export async function fetchCredential(
  secrets: SecretSource,
  ref: string,
  commandId: string,
  username?: string,
): Promise<RedfishCredentials> {
  const a = await secrets.fetch({ purpose: BMC_CREDENTIAL_PURPOSE, ref, allocationId: "", instanceId: "", commandId });
  if (a.status === "refused") {
    throw new CommandFailed("bmc-credential-refused", `the control plane refused credential ${ref}: ${a.message}`);
  }
  if (a.status === "unavailable") {
    throw new CommandFailed("bmc-credential-unavailable", `credential ${ref} is unavailable: ${a.message}`);
  }
  if (a.secret.length > MAX_CREDENTIAL_BYTES) {
    throw new CommandFailed("bmc-credential-invalid", `credential ${ref} is over ${MAX_CREDENTIAL_BYTES} bytes`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(a.secret));
  } catch (e) {
    throw new CommandFailed("bmc-credential-invalid", `credential ${ref} is not a JSON object`, { cause: e });
  }
  const d = doc as { username?: unknown; password?: unknown };
  const user = typeof d?.username === "string" ? d.username : username;
  if (typeof d?.password !== "string" || d.password === "" || typeof user !== "string" || user === "") {
    throw new CommandFailed("bmc-credential-invalid", `credential ${ref} lacks a username and a password`);
  }
  if (username !== undefined && user !== username) {
    throw new CommandFailed("bmc-credential-invalid", `credential ${ref} is for ${user}, not ${username}`);
  }
  return { username: user, password: d.password };
}

/** Records the host, fetches the credentials and opens a client (the caller closes it). */
export async function openBmc(
  ports: BmcPorts,
  t: CheckedTarget,
  kind: string,
  commandId: string,
  signal?: AbortSignal,
  credentials?: RedfishCredentials,
): Promise<RedfishClient> {
  await ports.hosts.record(t.host, t.port, kind);
  const creds = credentials ?? await fetchCredential(ports.secrets, t.credentialRef, commandId);
  return new RedfishClient({
    host: t.host,
    port: t.port,
    credentials: creds,
    ...(t.caPem ? { caPem: t.caPem } : {}),
    ...(t.certSha256 ? { certSha256: t.certSha256 } : {}),
    ...(ports.clock ? { clock: ports.clock } : {}),
    ...ports.client,
    ...(signal ? { signal } : {}),
  });
}
