/**
 * The `kubernetes-join` unit's driver over its port and the session's SecretRequest broker
 * (`core/host/kubernetes_join.ts` says what the unit promises).
 *
 * The token is asked for only when a join is planned. The request runs beside the pass (the session that answers it
 * may be waiting on this very pass); the pass reports `PROGRESSING` (`waiting for the join token`), the answer wakes
 * the loop, and the next pass joins with it. The token is used for that one join and dropped, whatever came of it:
 *
 * | answer      | unit                                                                  |
 * | ----------- | --------------------------------------------------------------------- |
 * | OK          | `kubeadm join`; a failure is terminal (`UnitFailed:kubernetes-join`) with kubeadm's words |
 * | REFUSED     | terminal: the control plane refused the join token                   |
 * | UNAVAILABLE | pending: asked again on the next pass                                 |
 * | not a bootstrap token | terminal, without the value                                 |
 *
 * @module
 */
import type { SecretAnswer, SecretSource } from "../converge/instances/user_data.ts";
import {
  isBootstrapToken,
  KUBERNETES_JOIN_PURPOSE,
  KubernetesJoinRefused,
  type KubernetesJoinSettings,
  parseKubernetesJoinSettings,
  planKubernetesJoin,
} from "./kubernetes_join.ts";
import type { KubernetesPort } from "./ports.ts";
import { HostUnitError, type UnitDriver } from "./unit.ts";

/** What the unit needs besides its port. */
export interface KubernetesJoinPeers {
  /** The session's SecretRequest broker; without one a join waits. */
  readonly secrets?: SecretSource;
  /** Makes the next converge pass due now (the token came). */
  readonly wake?: () => void;
}

/** The longest join token answer read (a bootstrap token is 23 bytes; a trailing newline is allowed). */
const _MAX_TOKEN_BYTES = 64;

/** The `kubernetes-join` unit. */
export function kubernetesJoinUnit(port: KubernetesPort, peers: KubernetesJoinPeers = {}): UnitDriver<
  KubernetesJoinSettings
> {
  let ask: { ref: string; answer?: SecretAnswer } | undefined;
  const fail = (msg: string) => new HostUnitError("kubernetes-join", true, `kubernetes-join: ${msg}`);

  /** The token, a wait message, or a throw for a refusal. */
  const token = (ref: string): { token: string } | { wait: string } => {
    if (!peers.secrets) return { wait: "this agent has no SecretRequest broker" };
    if (!ask || ask.ref !== ref) {
      const entry: { ref: string; answer?: SecretAnswer } = { ref };
      ask = entry;
      const q = { purpose: KUBERNETES_JOIN_PURPOSE, ref, allocationId: "", instanceId: "" };
      void peers.secrets.fetch(q).catch((e) => ({
        status: "unavailable" as const,
        message: e instanceof Error ? e.message : String(e),
      })).then((answer) => {
        entry.answer = answer;
        peers.wake?.();
      });
      return { wait: "SecretRequest sent" };
    }
    const a = ask.answer;
    if (!a) return { wait: "SecretRequest sent" };
    ask = undefined; // used once, whatever comes of it
    if (a.status === "refused") throw fail(`the control plane refused the join token ${ref}: ${a.message}`);
    if (a.status === "unavailable") return { wait: a.message };
    const text = a.secret.length <= _MAX_TOKEN_BYTES ? new TextDecoder().decode(a.secret).replace(/\r?\n$/, "") : "";
    if (!isBootstrapToken(text)) {
      throw fail(`the join token ${ref} is not a kubeadm bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})`);
    }
    return { token: text };
  };

  return {
    name: "kubernetes-join",
    parse: parseKubernetesJoinSettings,
    async converge(desired) {
      let steps;
      try {
        steps = planKubernetesJoin(desired, await port.read());
      } catch (e) {
        if (e instanceof KubernetesJoinRefused) {
          throw new HostUnitError("kubernetes-join", true, e.message, { cause: e });
        }
        throw e;
      }
      const step = steps[0];
      if (step === undefined) {
        ask = undefined;
        return { steps: 0 };
      }
      if (step.op === "reset") {
        const r = await port.reset();
        if (r.failure !== undefined) throw fail(`kubeadm reset failed: ${r.failure}`);
        return { steps: 1 };
      }
      const t = token(desired!.tokenRef);
      if ("wait" in t) return { steps: 0, pending: `kubernetes-join: waiting for the join token: ${t.wait}` };
      const r = await port.join(step.join, t.token);
      if (r.failure !== undefined) throw fail(`kubeadm join failed: ${r.failure}`);
      if (r.observed.joined !== step.join.apiServerEndpoint) {
        throw fail(
          `kubeadm join succeeded but the kubelet is joined to ${r.observed.joined ?? "nothing"}, not ` +
            step.join.apiServerEndpoint,
        );
      }
      return { steps: 1 };
    },
  };
}
