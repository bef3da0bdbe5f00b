/**
 * The `kubernetes-join` unit: `kubeadm join` once, as a worker, to the cluster the settings name; observed through the
 * kubelet's kubeconfig; never joined again while joined; `kubeadm reset -f` when the unit leaves the section, and only
 * when bcd joined.
 *
 * Settings (canonical JSON, every key checked default-deny):
 * `{"apiServerEndpoint": "10.0.0.1:6443", "caCertHashes": ["sha256:<64 hex>"], "tokenRef": "<secret reference>",
 *   "nodeName"?: "gpu-17", "labels"?: {"node.kubernetes.io/gpu": "h100"},
 *   "taints"?: [{"key": "nvidia.com/gpu", "value"?: "present", "effect": "NoSchedule"}]}`
 *
 * Choices the seed leaves open (its host-configuration page is not among the seeds), written down:
 * - **The bootstrap token is never in the spec.** `tokenRef` names it for a `SecretRequest` on the session (purpose
 *   {@link KUBERNETES_JOIN_PURPOSE}, no allocation or instance: the control plane binds it to the node whose spec names
 *   the reference). It is asked for only when a join is planned, beside the pass (the session that answers may be
 *   waiting on this very pass; the answer wakes the loop), used once and dropped. It must be a kubeadm bootstrap token
 *   (`[a-z0-9]{6}.[a-z0-9]{16}`); it is never logged, never in an argv, never in a message.
 * - **Discovery is always pinned**: at least one CA public key hash (`sha256:` and 64 lowercase hex, kubeadm's
 *   `--discovery-token-ca-cert-hash`); unsafe skip of the CA check is not offered.
 * - **Joined** means the kubelet's kubeconfig (`/etc/kubernetes/kubelet.conf`, which `kubeadm join` writes) names a
 *   `server: https://<endpoint>`; the endpoint is compared as written (host and port). A host joined to the wanted
 *   endpoint, by bcd or by hand, needs no step. A host joined to another endpoint fails the unit terminally, naming
 *   both: bcd never re-joins a joined host (drop the unit, so that bcd resets what it joined, then add the new one).
 * - Node name, labels and taints are join-time registration (`nodeRegistration` of kubeadm's `JoinConfiguration`):
 *   changing them on a joined node changes nothing; they are the cluster's to manage from then on. Labels in the
 *   `kubernetes.io` and `k8s.io` namespaces are refused except under `kubelet.kubernetes.io/` and
 *   `node.kubernetes.io/`, as the kubelet itself refuses `--node-labels` there (NodeRestriction).
 * - **bcd's record**: the helper records the endpoint before it runs `kubeadm join` (so a crash after the join still
 *   counts as bcd's) and drops it when the join fails without joining. A unit dropped from the section resets only
 *   when the record names the endpoint the kubelet is joined to; otherwise the record alone is dropped.
 *
 * @module
 */
import { object, refuse } from "./schema.ts";

/** The `SecretRequest` purpose of the join token. */
export const KUBERNETES_JOIN_PURPOSE = "kubernetes-join";
/** The most CA key hashes, labels and taints the settings may carry. */
export const MAX_CA_HASHES = 16;
export const MAX_NODE_LABELS = 64;
export const MAX_NODE_TAINTS = 32;

const _DNS_LABEL = "[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?";
const _DNS_NAME = new RegExp(`^${_DNS_LABEL}(?:\\.${_DNS_LABEL})*$`);
const _IPV4 = /^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])$/;
const _IPV6 = /^\[[0-9a-fA-F:.]{2,45}\]$/;
const _CA_HASH = /^sha256:[0-9a-f]{64}$/;
const _TOKEN = /^[a-z0-9]{6}\.[a-z0-9]{16}$/;
const _REF = /^[A-Za-z0-9._:/@+=-]{1,256}$/;
const _NAME_PART = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$/;
const _TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"] as const;

/** Whether `s` is a DNS subdomain (RFC 1123, lowercase, at most 253 characters). */
export function isDnsSubdomain(s: unknown): s is string {
  return typeof s === "string" && s.length <= 253 && _DNS_NAME.test(s);
}

/** Whether `s` is `host:port`: a DNS name, an IPv4 address or a bracketed IPv6 address, and a port 1–65535. */
export function isApiServerEndpoint(s: unknown): s is string {
  if (typeof s !== "string" || s.length > 260) return false;
  const colon = s.lastIndexOf(":");
  if (colon <= 0) return false;
  const host = s.slice(0, colon), port = s.slice(colon + 1);
  if (!/^[1-9][0-9]{0,4}$/.test(port) || Number(port) > 65535) return false;
  if (_IPV6.test(host)) return host.slice(1, -1).includes(":");
  return _IPV4.test(host) || isDnsSubdomain(host);
}

/** Whether `s` is a CA public key pin as kubeadm takes it (`sha256:` and 64 lowercase hex). */
export function isCaCertHash(s: unknown): s is string {
  return typeof s === "string" && _CA_HASH.test(s);
}

/** Whether `s` is a kubeadm bootstrap token (`[a-z0-9]{6}.[a-z0-9]{16}`). */
export function isBootstrapToken(s: unknown): s is string {
  return typeof s === "string" && _TOKEN.test(s);
}

/** Whether `s` is a label or taint key: `[prefix/]name`, the prefix a DNS subdomain, the name 1–63 characters. */
export function isLabelKey(s: unknown): s is string {
  if (typeof s !== "string") return false;
  const slash = s.indexOf("/");
  if (slash < 0) return _NAME_PART.test(s);
  return isDnsSubdomain(s.slice(0, slash)) && _NAME_PART.test(s.slice(slash + 1));
}

/** Whether `s` is a label value: empty, or 1–63 of `[A-Za-z0-9_.-]` starting and ending alphanumeric. */
export function isLabelValue(s: unknown): s is string {
  return typeof s === "string" && (s === "" || _NAME_PART.test(s));
}

/** Why the kubelet would refuse label key `k` as a `--node-labels` entry, or `undefined`. */
export function nodeLabelProblem(k: string): string | undefined {
  const slash = k.indexOf("/");
  if (slash < 0) return undefined;
  const prefix = k.slice(0, slash);
  const ns = (d: string) => prefix === d || prefix.endsWith(`.${d}`);
  if (!ns("kubernetes.io") && !ns("k8s.io")) return undefined;
  if (ns("kubelet.kubernetes.io") || ns("node.kubernetes.io")) return undefined;
  return "is in the kubernetes.io/k8s.io namespaces the kubelet refuses (only kubelet.kubernetes.io/ and " +
    "node.kubernetes.io/ may be set at join)";
}

/** A taint the node registers with. */
export interface NodeTaint {
  readonly key: string;
  readonly value?: string;
  readonly effect: typeof _TAINT_EFFECTS[number];
}

/** What `kubeadm join` is told (the token apart: it travels on its own). */
export interface KubeJoin {
  readonly apiServerEndpoint: string;
  readonly caCertHashes: readonly string[];
  readonly nodeName?: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly NodeTaint[];
}

/** The unit's checked settings. */
export interface KubernetesJoinSettings extends KubeJoin {
  /** The reference of the bootstrap token for the `SecretRequest`. */
  readonly tokenRef: string;
}

/** Checks one taint (shared by the unit's settings and the helper's arguments). */
export function taintProblem(t: unknown): string | undefined {
  if (typeof t !== "object" || t === null || Array.isArray(t)) return "is not an object";
  const o = t as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!["key", "value", "effect"].includes(k)) return `has unknown key ${k}`;
  if (!isLabelKey(o.key)) return "has a key that is not [prefix/]name";
  if (o.value !== undefined && !isLabelValue(o.value)) return "has a value that is not a label value";
  if (!(_TAINT_EFFECTS as readonly unknown[]).includes(o.effect)) {
    return `has an effect not ${_TAINT_EFFECTS.join("|")}`;
  }
  return undefined;
}

/** Checks the labels (shared by the unit's settings and the helper's arguments). */
export function labelsProblem(labels: unknown): string | undefined {
  if (typeof labels !== "object" || labels === null || Array.isArray(labels)) return "is not an object";
  const entries = Object.entries(labels);
  if (entries.length > MAX_NODE_LABELS) return `has more than ${MAX_NODE_LABELS} labels`;
  for (const [k, v] of entries) {
    if (!isLabelKey(k)) return `has key ${JSON.stringify(k)} that is not [prefix/]name`;
    const why = nodeLabelProblem(k);
    if (why !== undefined) return `has key ${JSON.stringify(k)} that ${why}`;
    if (!isLabelValue(v)) return `has value ${JSON.stringify(v)} of ${k} that is not a label value`;
  }
  return undefined;
}

/** Parses the unit's settings (throws `HostSettingsError` naming the key). */
export function parseKubernetesJoinSettings(raw: Record<string, unknown>): KubernetesJoinSettings {
  const u = "kubernetes-join";
  const s = object(u, "settings", raw, [
    "apiServerEndpoint",
    "caCertHashes",
    "tokenRef",
    "nodeName",
    "labels",
    "taints",
  ], [
    "apiServerEndpoint",
    "caCertHashes",
    "tokenRef",
  ]);
  if (!isApiServerEndpoint(s.apiServerEndpoint)) {
    refuse(u, "settings.apiServerEndpoint", s.apiServerEndpoint, "is not host:port (a DNS name, IPv4 or [IPv6])");
  }
  const hashes = s.caCertHashes;
  if (!Array.isArray(hashes) || hashes.length < 1 || hashes.length > MAX_CA_HASHES) {
    refuse(u, "settings.caCertHashes", hashes, `is not a list of 1 to ${MAX_CA_HASHES} CA key hashes`);
  }
  hashes.forEach((h, i) => {
    if (!isCaCertHash(h)) refuse(u, `settings.caCertHashes[${i}]`, h, "is not sha256:<64 lowercase hex>");
  });
  if (typeof s.tokenRef !== "string" || !_REF.test(s.tokenRef)) {
    refuse(u, "settings.tokenRef", s.tokenRef, "is not a secret reference (1-256 of A-Za-z0-9._:/@+=-)");
  }
  if (s.nodeName !== undefined && !isDnsSubdomain(s.nodeName)) {
    refuse(u, "settings.nodeName", s.nodeName, "is not a DNS subdomain (lowercase, at most 253 characters)");
  }
  const labels = s.labels ?? {};
  const lwhy = labelsProblem(labels);
  if (lwhy !== undefined) refuse(u, "settings.labels", labels, lwhy);
  const taints = s.taints ?? [];
  if (!Array.isArray(taints) || taints.length > MAX_NODE_TAINTS) {
    refuse(u, "settings.taints", taints, `is not a list of at most ${MAX_NODE_TAINTS} taints`);
  }
  taints.forEach((t, i) => {
    const why = taintProblem(t);
    if (why !== undefined) refuse(u, `settings.taints[${i}]`, t, why);
  });
  return {
    apiServerEndpoint: s.apiServerEndpoint,
    caCertHashes: [...hashes as string[]],
    tokenRef: s.tokenRef,
    ...(s.nodeName !== undefined ? { nodeName: s.nodeName as string } : {}),
    labels: { ...labels as Record<string, string> },
    taints: (taints as NodeTaint[]).map((t) => ({
      key: t.key,
      ...(t.value !== undefined ? { value: t.value } : {}),
      effect: t.effect,
    })),
  };
}

/** What the helper reports: the endpoint the kubelet is joined to, and the endpoint bcd's record names. */
export interface KubernetesObserved {
  /** `host:port` of the kubelet kubeconfig's `server`, `null` when the host is not joined. */
  readonly joined: string | null;
  /** The endpoint bcd joined (its record), `null` when bcd joined nothing. */
  readonly managed: string | null;
}

/** A step: join with the settings (the token is fetched for it), or give back bcd's join. */
export type KubernetesStep = { readonly op: "join"; readonly join: KubeJoin } | { readonly op: "reset" };

/** A refusal of the plan: terminal at this generation. */
export class KubernetesJoinRefused extends Error {
  override name = "KubernetesJoinRefused";
}

/**
 * The minimal steps from `observed` to `desired`.
 *
 * | desired      | joined            | bcd's record | steps                                   |
 * | ------------ | ----------------- | ------------ | --------------------------------------- |
 * | endpoint E   | E                 | any          | none                                    |
 * | endpoint E   | none              | any          | join                                    |
 * | endpoint E   | another endpoint  | any          | refused: never re-joined                |
 * | not listed   | any               | none         | none                                    |
 * | not listed   | any               | an endpoint  | reset (the helper resets only the join bcd made, else drops the record) |
 */
export function planKubernetesJoin(
  desired: KubernetesJoinSettings | undefined,
  observed: KubernetesObserved,
): KubernetesStep[] {
  if (desired === undefined) return observed.managed === null ? [] : [{ op: "reset" }];
  if (observed.joined === desired.apiServerEndpoint) return [];
  if (observed.joined !== null) {
    throw new KubernetesJoinRefused(
      `kubernetes-join: this host is joined to ${observed.joined}, not ${desired.apiServerEndpoint}; bcd never ` +
        `re-joins a joined host${
          observed.managed === observed.joined ? " (drop the unit to reset bcd's join first)" : ""
        }`,
    );
  }
  const { tokenRef: _ref, ...join } = desired;
  return [{ op: "join", join }];
}
