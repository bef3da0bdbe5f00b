/**
 * The `kubernetes-join` unit's host half, run by the root helper (`core/host/kubernetes_join.ts`): the endpoint the
 * kubelet is joined to from its kubeconfig (`<etc>/kubernetes/kubelet.conf`, which `kubeadm join` writes), bcd's
 * record of the join it made (`<etc>/bcd/host/kubernetes-join.json`), `kubeadm join --config FILE` and
 * `kubeadm reset -f`.
 *
 * The bootstrap token is never in an argv, a log line or a message: the helper renders kubeadm's `JoinConfiguration`
 * (`kubeadm.k8s.io/v1beta4`, kubeadm 1.31 or later; v1beta3 is deprecated and goes in 1.34 or later) into a file it
 * creates 0600 in a fresh 0700 directory of its own, runs `kubeadm join --config` on it, and removes the directory
 * whatever came of the join; kubeadm's output is scrubbed of the token before it becomes a failure message. Every
 * value in the file was checked by the helper's argument table (`core/helper/args_host.ts`) and is written as a JSON
 * string (a YAML double-quoted scalar), so no value can open a YAML structure.
 *
 * @module
 */
import type { KubeJoin, KubernetesApplied, KubernetesObserved, KubernetesPort } from "../../core/host/mod.ts";
import { isApiServerEndpoint } from "../../core/host/mod.ts";
import { atomicWrite, removeDurably } from "../cdi/atomic_write.ts";

/** bcd's record of its join, under the helper's /etc root. */
export const KUBERNETES_JOIN_RECORD = "bcd/host/kubernetes-join.json";
/** The kubelet's kubeconfig, under the helper's /etc root. */
export const KUBELET_KUBECONFIG = "kubernetes/kubelet.conf";

/** The most of a kubeconfig or record read. */
const _MAX_FILE = 1024 * 1024;
/** The most of kubeadm's output kept in a failure. */
const _MAX_MESSAGE = 800;

/** Options of {@link KubeadmJoin}. */
export interface KubeadmJoinOptions {
  /** `kubeadm` (default on `PATH`). */
  readonly kubeadm?: string;
  /** The /etc root (default `/etc`). */
  readonly etc?: string;
  /** Where the join configuration's private directory is made (default the system's temp dir). */
  readonly tmp?: string;
  /** A join's or reset's timeout in ms (default 10 minutes: discovery alone may wait 5). */
  readonly timeoutMs?: number;
}

/** kubeadm's `JoinConfiguration` for `join` with `token`. */
export function renderJoinConfiguration(join: KubeJoin, token: string): string {
  const q = (s: string) => JSON.stringify(s);
  const labels = Object.entries(join.labels).map(([k, v]) => `${k}=${v}`).join(",");
  return [
    "apiVersion: kubeadm.k8s.io/v1beta4",
    "kind: JoinConfiguration",
    "discovery:",
    "  bootstrapToken:",
    `    apiServerEndpoint: ${q(join.apiServerEndpoint)}`,
    `    token: ${q(token)}`,
    "    caCertHashes:",
    ...join.caCertHashes.map((h) => `      - ${q(h)}`),
    "nodeRegistration:",
    ...(join.nodeName !== undefined ? [`  name: ${q(join.nodeName)}`] : []),
    ...(labels !== "" ? ["  kubeletExtraArgs:", `    - name: "node-labels"`, `      value: ${q(labels)}`] : []),
    join.taints.length === 0 ? "  taints: []" : "  taints:",
    ...join.taints.flatMap((t) => [
      `    - key: ${q(t.key)}`,
      ...(t.value !== undefined ? [`      value: ${q(t.value)}`] : []),
      `      effect: ${q(t.effect)}`,
    ]),
    "",
  ].join("\n");
}

/** The `host:port` of the first `server: https://…` of a kubeconfig, `null` when it names none. */
export function kubeconfigServer(text: string): string | null {
  for (const line of text.split("\n")) {
    const m = /^\s*server:\s*["']?https:\/\/([^\s"'/]+)\/?["']?\s*$/.exec(line);
    if (m) return m[1]!;
  }
  return null;
}

async function _readBounded(path: string): Promise<string | null> {
  let f: Deno.FsFile;
  try {
    f = await Deno.open(path, { read: true });
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
  try {
    const size = (await f.stat()).size;
    if (size > _MAX_FILE) throw new RangeError(`${path} is ${size} bytes, more than ${_MAX_FILE}`);
    const buf = new Uint8Array(size);
    let n = 0;
    while (n < size) {
      const got = await f.read(buf.subarray(n));
      if (got === null) break;
      n += got;
    }
    return new TextDecoder().decode(buf.subarray(0, n));
  } finally {
    f.close();
  }
}

/** The real kubeadm port. */
export class KubeadmJoin implements KubernetesPort {
  readonly #o: KubeadmJoinOptions;
  readonly record: string;
  readonly kubeconfig: string;
  constructor(opts: KubeadmJoinOptions = {}) {
    this.#o = opts;
    this.record = `${opts.etc ?? "/etc"}/${KUBERNETES_JOIN_RECORD}`;
    this.kubeconfig = `${opts.etc ?? "/etc"}/${KUBELET_KUBECONFIG}`;
  }

  async read(): Promise<KubernetesObserved> {
    const conf = await _readBounded(this.kubeconfig);
    let joined: string | null = null;
    if (conf !== null) {
      joined = kubeconfigServer(conf);
      if (joined === null) throw new Error(`${this.kubeconfig} names no https server`);
    }
    const rec = await _readBounded(this.record);
    let managed: string | null = null;
    if (rec !== null) {
      const o = JSON.parse(rec) as { endpoint?: unknown };
      if (!isApiServerEndpoint(o.endpoint)) throw new RangeError(`${this.record} names no endpoint`);
      managed = o.endpoint;
    }
    return { joined, managed };
  }

  async join(join: KubeJoin, token: string): Promise<KubernetesApplied> {
    // The record first: a crash after kubeadm joined still leaves the join bcd's to reset.
    await atomicWrite(this.record, JSON.stringify({ endpoint: join.apiServerEndpoint }) + "\n", 0o600);
    const dir = await Deno.makeTempDir({ prefix: "bcd-kubeadm-", ...(this.#o.tmp ? { dir: this.#o.tmp } : {}) });
    let r: _Run;
    try {
      await Deno.chmod(dir, 0o700);
      const file = `${dir}/join.yaml`;
      const f = await Deno.open(file, { write: true, createNew: true, mode: 0o600 });
      try {
        await f.write(new TextEncoder().encode(renderJoinConfiguration(join, token)));
      } finally {
        f.close();
      }
      r = await this.#kubeadm(["join", "--config", file]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
    const observed = await this.read();
    if (r.code === 0) return { observed };
    if (observed.joined !== join.apiServerEndpoint) {
      await removeDurably(this.record);
      return { observed: { ...observed, managed: null }, failure: _words(r, token) };
    }
    return { observed, failure: _words(r, token) };
  }

  async reset(): Promise<KubernetesApplied> {
    const before = await this.read();
    if (before.managed !== null && before.joined === before.managed) {
      const r = await this.#kubeadm(["reset", "-f"]);
      if (r.code !== 0) return { observed: await this.read(), failure: _words(r) };
    }
    await removeDurably(this.record);
    return { observed: await this.read() };
  }

  async #kubeadm(args: string[]): Promise<_Run> {
    const bin = this.#o.kubeadm ?? "kubeadm";
    try {
      const o = await new Deno.Command(bin, {
        args,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(this.#o.timeoutMs ?? 10 * 60_000),
      }).output();
      const d = new TextDecoder();
      return { code: o.code, stdout: d.decode(o.stdout), stderr: d.decode(o.stderr) };
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return { code: 127, stdout: "", stderr: `${bin} is not installed` };
      throw e;
    }
  }
}

interface _Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** kubeadm's reason (its `error execution phase` lines, else the tail), the token scrubbed out. */
function _words(r: _Run, token?: string): string {
  const scrub = (s: string) => token ? s.split(token).join("<token>").split(token.split(".")[1]!).join("<secret>") : s;
  const lines = scrub(`${r.stderr}\n${r.stdout}`).split("\n").map((l) => l.trim()).filter((l) => l !== "");
  const errors = lines.filter((l) => /^error|\[ERROR|fatal/i.test(l));
  return ((errors.length ? errors : lines.slice(-3)).join("; ") || `exit ${r.code}`).slice(0, _MAX_MESSAGE);
}
