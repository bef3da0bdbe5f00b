/**
 * An in-memory {@link KubernetesPort} that keeps the rules the helper's real backend keeps (the record written before
 * the join and dropped when the join fails without joining; a reset only of the join the record names), over fake
 * clusters that accept one bootstrap token each, for converger tests and the port's shared contract suite.
 *
 * @module
 */
import type { KubeJoin, KubernetesObserved } from "./kubernetes_join.ts";
import type { KubernetesApplied, KubernetesPort } from "./ports.ts";

/** A fake host's kubelet and the clusters it can reach. */
export class FakeKubernetes implements KubernetesPort {
  /** Endpoint → the bootstrap token its API server accepts. */
  readonly clusters = new Map<string, string>();
  joined: string | null = null;
  managed: string | null = null;
  /** Each join (with the token it carried) and reset, in order. */
  readonly calls: ({ op: "join"; join: KubeJoin; token: string } | { op: "reset"; ran: boolean })[] = [];

  read(): Promise<KubernetesObserved> {
    return Promise.resolve({ joined: this.joined, managed: this.managed });
  }

  join(join: KubeJoin, token: string): Promise<KubernetesApplied> {
    this.calls.push({ op: "join", join, token });
    this.managed = join.apiServerEndpoint;
    const want = this.clusters.get(join.apiServerEndpoint);
    if (this.joined !== null) {
      this.managed = null;
      return this.#after("error execution phase preflight: /etc/kubernetes/kubelet.conf already exists");
    }
    if (want === undefined || want !== token) {
      this.managed = null;
      return this.#after(
        `error execution phase preflight: couldn't validate the identity of the API Server: ` +
          `could not find a JWS signature in the cluster-info ConfigMap for token ID "${token.slice(0, 6)}"`,
      );
    }
    this.joined = join.apiServerEndpoint;
    return this.#after();
  }

  reset(): Promise<KubernetesApplied> {
    const ran = this.managed !== null && this.joined === this.managed;
    this.calls.push({ op: "reset", ran });
    if (ran) this.joined = null;
    this.managed = null;
    return this.#after();
  }

  async #after(failure?: string): Promise<KubernetesApplied> {
    return { observed: await this.read(), ...(failure !== undefined ? { failure } : {}) };
  }
}
