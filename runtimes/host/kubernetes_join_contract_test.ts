/**
 * One contract for the `kubernetes-join` unit's port, run against the in-memory fake (`core/host/fake_kubernetes.ts`),
 * the real backend (`KubeadmJoin`) driving `fixtures/host/fake-kubeadm` with every argv and join configuration
 * recorded and asserted, and the same through a real helper socket (`kube.read`, `kube.join`, `kube.reset`). This
 * machine has no Kubernetes cluster, so no variant runs the real kubeadm. The token comes from a SecretRequest answered
 * by a broker the test holds; the passes follow the converge loop: the request goes out beside a pass, its answer wakes
 * the loop, the next pass joins.
 */
import assert from "node:assert/strict";
import { ConditionSet } from "../../core/converge/conditions.ts";
import type { SecretAnswer, SecretQuery, SecretSource } from "../../core/converge/instances/user_data.ts";
import { FakeKubernetes } from "../../core/host/fake_kubernetes.ts";
import { HostConverger, kubernetesJoinUnit, type KubernetesPort } from "../../core/host/mod.ts";
import { silentLogger } from "../../core/log/mod.ts";
import { HelperKubernetes } from "../helper/ports_host.ts";
import { startTestHelper } from "../helper/helper_testing.ts";
import { KubeadmJoin } from "./kubeadm_join.ts";

const FIX = new URL("../../fixtures/", import.meta.url).pathname;
const EP = "10.20.0.1:6443", OTHER = "k8s-b.example:6443";
const TOKEN = "abcdef.0123456789abcdef", WRONG = "zzzzzz.0000000000000000";
const HASH = `sha256:${"3c".repeat(32)}`;

const section = (units: Record<string, unknown>) => ({
  units: Object.entries(units).map(([name, s]) => ({ name, settings_json: JSON.stringify(s) })),
});
const join = (endpoint = EP, tokenRef = "k8s/join-a") =>
  section({
    "kubernetes-join": {
      apiServerEndpoint: endpoint,
      caCertHashes: [HASH],
      tokenRef,
      nodeName: "gpu-17",
      labels: { "node.kubernetes.io/gpu": "h100", team: "ml" },
      taints: [{ key: "nvidia.com/gpu", value: "present", effect: "NoSchedule" }],
    },
  });

/** A port over a host with a hand on it. */
interface KubeSubject {
  port: KubernetesPort;
  /** The API servers the host reaches and the token each accepts. */
  cluster(endpoint: string, token: string): Promise<void>;
  /** An operator joined this host by hand. */
  joinByHand(endpoint: string): Promise<void>;
  joined(): Promise<string | null>;
  /** kubeadm's argv lines, where real executables run. */
  argv?(): Promise<string[]>;
  /** The join configurations kubeadm was handed (mode lines and files), where real executables run. */
  configs?(): Promise<string>;
  /** The temp root the helper's private join directories are made in (empty after every join). */
  tmp?: string;
  close(): Promise<void>;
}

/** A broker that answers from a map, and the wake a test awaits between passes. */
class _Broker implements SecretSource {
  readonly tokens = new Map<string, SecretAnswer>();
  readonly asked: SecretQuery[] = [];
  #woke = Promise.withResolvers<void>();
  fetch(q: SecretQuery): Promise<SecretAnswer> {
    this.asked.push(q);
    return Promise.resolve(this.tokens.get(q.ref) ?? { status: "refused", message: `no secret ${q.ref}` });
  }
  wake = () => this.#woke.resolve();
  async woken(): Promise<void> {
    await this.#woke.promise;
    this.#woke = Promise.withResolvers<void>();
  }
}

async function kubeContract(t: Deno.TestContext, make: () => Promise<KubeSubject>) {
  const s = await make();
  const broker = new _Broker();
  broker.tokens.set("k8s/join-a", { status: "ok", secret: new TextEncoder().encode(`${TOKEN}\n`) });
  broker.tokens.set("k8s/wrong", { status: "ok", secret: new TextEncoder().encode(WRONG) });
  const host = new HostConverger([kubernetesJoinUnit(s.port, { secrets: broker, wake: broker.wake })]);
  const ctx = () => ({ generation: 1, conditions: new ConditionSet({ monotonic: () => 0 }), log: silentLogger() });
  /** The pass that asks, then (after the answer woke the loop) the pass that joins. */
  const twoPasses = async (spec: unknown) => {
    const first = await host.converge(spec, ctx());
    assert.equal(first.kind, "progressing", JSON.stringify(first));
    assert.match(first.kind === "progressing" ? first.message : "", /waiting for the join token: SecretRequest sent/);
    await broker.woken();
    return await host.converge(spec, ctx());
  };
  const argvFrom = async (n: number) => ((await s.argv?.()) ?? []).slice(n);
  const argvLen = async () => (await s.argv?.())?.length ?? 0;
  await s.cluster(EP, TOKEN);
  try {
    await t.step(
      "a token the API server does not take: FAILED naming the unit, kubeadm's words, no token",
      async () => {
        const out = await twoPasses(join(EP, "k8s/wrong"));
        assert.equal(out.kind, "failed");
        assert.equal(out.kind === "failed" ? out.reason : "", "UnitFailed:kubernetes-join");
        const msg = out.kind === "failed" ? out.message : "";
        assert.match(msg, /kubernetes-join: kubeadm join failed: .*(JWS signature|identity of the API Server)/);
        assert.ok(!msg.includes(WRONG) && !msg.includes(WRONG.split(".")[1]!), msg);
        assert.equal(await s.joined(), null);
        assert.deepEqual(
          await s.port.read(),
          { joined: null, managed: null },
          "the record of a failed join is dropped",
        );
      },
    );
    await t.step("a join: the token asked for once, kubeadm join --config a 0600 file, then joined", async () => {
      const before = await argvLen();
      const asked = broker.asked.length;
      const out = await twoPasses(join());
      assert.deepEqual(out, { kind: "converged" });
      assert.equal(await s.joined(), EP);
      assert.deepEqual(await s.port.read(), { joined: EP, managed: EP });
      assert.deepEqual(broker.asked.slice(asked), [
        { purpose: "kubernetes-join", ref: "k8s/join-a", allocationId: "", instanceId: "" },
      ]);
      if (s.argv) {
        const argv = await argvFrom(before);
        assert.equal(argv.length, 1, argv.join("\n"));
        assert.match(argv[0]!, /^kubeadm join --config \/\S+\/bcd-kubeadm-[^/]+\/join\.yaml$/);
        assert.ok(!argv[0]!.includes(TOKEN), "never the token in argv");
        const configs = await s.configs!();
        const last = configs.split("---\n").filter(Boolean).at(-1)!;
        assert.match(last, /^mode 600 dir 700\n/);
        for (
          const line of [
            "apiVersion: kubeadm.k8s.io/v1beta4",
            "kind: JoinConfiguration",
            `    apiServerEndpoint: "${EP}"`,
            `    token: "${TOKEN}"`,
            `      - "${HASH}"`,
            `  name: "gpu-17"`,
            `      value: "node.kubernetes.io/gpu=h100,team=ml"`,
            `    - key: "nvidia.com/gpu"`,
            `      effect: "NoSchedule"`,
          ]
        ) assert.ok(last.includes(`${line}\n`), `${line} in\n${last}`);
        assert.deepEqual([...Deno.readDirSync(s.tmp!)], [], "the join configuration's directory is removed");
      }
    });
    await t.step("already joined to the endpoint: no step, no token asked", async () => {
      const before = await argvLen();
      const asked = broker.asked.length;
      assert.deepEqual(await host.converge(join(), ctx()), { kind: "converged" });
      assert.deepEqual(await argvFrom(before), []);
      assert.equal(broker.asked.length, asked);
    });
    await t.step("joined and the spec names another endpoint: FAILED naming both, never re-joined", async () => {
      const before = await argvLen();
      const out = await host.converge(join(OTHER), ctx());
      assert.equal(out.kind === "failed" ? out.reason : out.kind, "UnitFailed:kubernetes-join");
      assert.match(out.kind === "failed" ? out.message : "", new RegExp(`joined to ${EP}, not ${OTHER}; bcd never`));
      assert.deepEqual(await argvFrom(before), []);
      assert.equal(await s.joined(), EP);
    });
    await t.step("the unit dropped: kubeadm reset -f of bcd's join, the record gone", async () => {
      const before = await argvLen();
      assert.deepEqual(await host.converge(section({}), ctx()), { kind: "converged" });
      if (s.argv) assert.deepEqual(await argvFrom(before), ["kubeadm reset -f"]);
      assert.deepEqual(await s.port.read(), { joined: null, managed: null });
      const again = await argvLen();
      assert.deepEqual(await host.converge(section({}), ctx()), { kind: "converged" });
      assert.deepEqual(await argvFrom(again), [], "nothing left to give back");
    });
    await t.step("joined by hand to the endpoint: the unit takes no step, and dropping it resets nothing", async () => {
      await s.joinByHand(EP);
      const before = await argvLen();
      assert.deepEqual(await host.converge(join(), ctx()), { kind: "converged" });
      assert.deepEqual(await host.converge(section({}), ctx()), { kind: "converged" });
      assert.deepEqual(await argvFrom(before), []);
      assert.equal(await s.joined(), EP, "a join bcd did not make stays");
    });
  } finally {
    await s.close();
  }
}

Deno.test("kubernetes-join port contract: in-memory fake", async (t) => {
  await kubeContract(t, () => {
    const f = new FakeKubernetes();
    return Promise.resolve({
      port: f,
      cluster: (ep, tok) => Promise.resolve(void f.clusters.set(ep, tok)),
      joinByHand: (ep) => Promise.resolve(void (f.joined = ep)),
      joined: () => Promise.resolve(f.joined),
      close: () => Promise.resolve(),
    });
  });
});

/** A state dir, an /etc root and a temp root for the fake kubeadm, and a wrapper pointing it at them. */
async function _fakeHost(): Promise<{ state: string; etc: string; tmp: string; kubeadm: string }> {
  const state = await Deno.makeTempDir({ prefix: "bcd-kube-" });
  const etc = `${state}/etc`, tmp = `${state}/tmp`;
  await Deno.mkdir(etc);
  await Deno.mkdir(tmp);
  const kubeadm = `${state}/kubeadm`;
  await Deno.writeTextFile(
    kubeadm,
    `#!/bin/sh\nexport FAKE_KUBE_STATE='${state}' FAKE_KUBE_ETC='${etc}'\nexec '${FIX}host/fake-kubeadm' "$@"\n`,
  );
  await Deno.chmod(kubeadm, 0o755);
  return { state, etc, tmp, kubeadm };
}

function _kubeadmSubject(h: Awaited<ReturnType<typeof _fakeHost>>, port: KubernetesPort, close: () => Promise<void>) {
  const conf = `${h.etc}/kubernetes/kubelet.conf`;
  const read = (p: string) =>
    Deno.readTextFile(p).catch((e) => {
      if (e instanceof Deno.errors.NotFound) return "";
      throw e;
    });
  return {
    port,
    tmp: h.tmp,
    cluster: (ep: string, tok: string) => Deno.writeTextFile(`${h.state}/clusters`, `${ep} ${tok}\n`, { append: true }),
    joinByHand: async (ep: string) => {
      await Deno.mkdir(`${h.etc}/kubernetes`, { recursive: true });
      await Deno.writeTextFile(conf, `clusters:\n- cluster:\n    server: "https://${ep}"\n`);
    },
    joined: async () => (await read(conf)).match(/server: "?https:\/\/([^\s"]+)/)?.[1] ?? null,
    argv: async () => (await read(`${h.state}/argv.log`)).split("\n").filter(Boolean),
    configs: () => read(`${h.state}/configs.log`),
    close,
  } satisfies KubeSubject;
}

Deno.test("kubernetes-join port contract: KubeadmJoin running a fake kubeadm", async (t) => {
  const h = await _fakeHost();
  const port = new KubeadmJoin({ kubeadm: h.kubeadm, etc: h.etc, tmp: h.tmp });
  await kubeContract(t, () => Promise.resolve(_kubeadmSubject(h, port, () => Promise.resolve())));
  await t.step("a reset kubeadm refuses keeps the record, so the next pass tries again", async () => {
    await Deno.remove(`${h.etc}/kubernetes/kubelet.conf`);
    await Deno.writeTextFile(`${h.state}/clusters`, `${EP} ${TOKEN}\n`);
    assert.equal(
      (await port.join({ apiServerEndpoint: EP, caCertHashes: [HASH], labels: {}, taints: [] }, TOKEN)).failure,
      undefined,
    );
    await Deno.writeTextFile(`${h.state}/fail-reset`, "");
    const r = await port.reset();
    assert.match(r.failure ?? "", /cleanup-node: failed to unmount/);
    assert.deepEqual(r.observed, { joined: EP, managed: EP });
  });
  await Deno.remove(h.state, { recursive: true });
});

Deno.test("kubernetes-join port contract: through a real helper socket (kube.read / kube.join / kube.reset)", async (t) => {
  const h = await _fakeHost();
  const helper = await startTestHelper({ kubernetes: new KubeadmJoin({ kubeadm: h.kubeadm, etc: h.etc, tmp: h.tmp }) });
  await kubeContract(
    t,
    () => Promise.resolve(_kubeadmSubject(h, new HelperKubernetes(helper.client), () => Promise.resolve())),
  );
  await t.step("the helper's log lines carry the join's settings, never the token", () => {
    const lines = helper.logs.map((l) => JSON.stringify(l));
    assert.ok(lines.some((l) => l.includes('"op":"kube.join"') && l.includes("<redacted>")), lines.join("\n"));
    assert.ok(!lines.some((l) => l.includes(TOKEN) || l.includes(WRONG)), "no token in any helper log line");
  });
  await helper.close();
  await Deno.remove(h.state, { recursive: true });
});
