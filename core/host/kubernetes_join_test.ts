import assert from "node:assert/strict";
import type { SecretAnswer, SecretQuery, SecretSource } from "../converge/instances/user_data.ts";
import { FakeKubernetes } from "./fake_kubernetes.ts";
import {
  isApiServerEndpoint,
  KubernetesJoinRefused,
  type KubernetesJoinSettings,
  type KubernetesObserved,
  parseKubernetesJoinSettings,
  planKubernetesJoin,
} from "./kubernetes_join.ts";
import { kubernetesJoinUnit } from "./kubernetes_unit.ts";
import { HostUnitError } from "./unit.ts";
import { HostSettingsError } from "./units.ts";

const HASH = `sha256:${"a1".repeat(32)}`;
const BASE = { apiServerEndpoint: "10.0.0.1:6443", caCertHashes: [HASH], tokenRef: "k8s/join" };

Deno.test("kubernetes-join settings: accepted as an operator of kubeadm writes them", () => {
  const s = parseKubernetesJoinSettings({
    ...BASE,
    nodeName: "gpu-17.rack-3",
    labels: { "node.kubernetes.io/gpu": "h100", "example.com/pool": "a", plain: "" },
    taints: [{ key: "nvidia.com/gpu", effect: "NoSchedule" }, { key: "x", value: "y", effect: "NoExecute" }],
  });
  assert.equal(s.nodeName, "gpu-17.rack-3");
  assert.deepEqual(s.taints[0], { key: "nvidia.com/gpu", effect: "NoSchedule" });
  assert.deepEqual(parseKubernetesJoinSettings(BASE).labels, {});
  for (const ep of ["k8s.example:6443", "[fd00::1]:6443", "192.168.1.10:443", "api:1"]) {
    assert.ok(isApiServerEndpoint(ep), ep);
  }
});

Deno.test("kubernetes-join settings refuse, row by row, naming the key", async (t) => {
  const rows: [string, Record<string, unknown>, RegExp][] = [
    ["the token itself in the spec", { ...BASE, token: "abcdef.0123456789abcdef" }, /unknown key settings\.token$/],
    ["no endpoint", { caCertHashes: [HASH], tokenRef: "r" }, /settings\.apiServerEndpoint null is missing/],
    ["an endpoint without a port", { ...BASE, apiServerEndpoint: "k8s.example" }, /apiServerEndpoint .* not host:port/],
    ["a URL as endpoint", { ...BASE, apiServerEndpoint: "https://k8s:6443" }, /apiServerEndpoint/],
    ["port 70000", { ...BASE, apiServerEndpoint: "k8s:70000" }, /apiServerEndpoint/],
    ["IPv6 unbracketed", { ...BASE, apiServerEndpoint: "fd00::1:6443" }, /apiServerEndpoint/],
    ["no CA pin (unsafe discovery)", { ...BASE, caCertHashes: [] }, /caCertHashes \[\] is not a list of 1 to 16/],
    ["a CA pin in upper case", { ...BASE, caCertHashes: [HASH.toUpperCase()] }, /caCertHashes\[0\]/],
    ["a ref with a space", { ...BASE, tokenRef: "a b" }, /settings\.tokenRef .* is not a secret reference/],
    ["a node name in capitals", { ...BASE, nodeName: "GPU-17" }, /settings\.nodeName .* DNS subdomain/],
    ["a node-role label", { ...BASE, labels: { "node-role.kubernetes.io/worker": "" } }, /kubelet refuses/],
    ["a k8s.io label", { ...BASE, labels: { "x.k8s.io/a": "b" } }, /kubelet refuses/],
    ["a label value of 64", { ...BASE, labels: { a: "b".repeat(64) } }, /is not a label value/],
    ["a taint without effect", { ...BASE, taints: [{ key: "a" }] }, /settings\.taints\[0\] .* effect/],
    ["a taint with an unknown key", { ...BASE, taints: [{ key: "a", effect: "NoSchedule", by: 1 }] }, /unknown key by/],
  ];
  for (const [name, raw, msg] of rows) {
    await t.step(name, () => {
      assert.throws(
        () => parseKubernetesJoinSettings(raw),
        (e) => e instanceof HostSettingsError && e.reason === "InvalidUnitSettings" && msg.test(e.message),
      );
    });
  }
});

Deno.test("kubernetes-join plan: the module's table, row by row", async (t) => {
  const want = parseKubernetesJoinSettings(BASE);
  const { tokenRef: _r, ...join } = want;
  const rows: [string, KubernetesJoinSettings | undefined, KubernetesObserved, unknown[] | RegExp][] = [
    ["wanted, joined there (by bcd)", want, { joined: "10.0.0.1:6443", managed: "10.0.0.1:6443" }, []],
    ["wanted, joined there by hand", want, { joined: "10.0.0.1:6443", managed: null }, []],
    ["wanted, not joined", want, { joined: null, managed: null }, [{ op: "join", join }]],
    ["wanted, not joined, a stale record", want, { joined: null, managed: "10.0.0.1:6443" }, [{ op: "join", join }]],
    ["wanted, joined elsewhere by bcd", want, { joined: "k8s-b:6443", managed: "k8s-b:6443" }, /drop the unit/],
    [
      "wanted, joined elsewhere by hand",
      want,
      { joined: "k8s-b:6443", managed: null },
      /never re-joins a joined host$/,
    ],
    ["not listed, no record", undefined, { joined: "k8s-b:6443", managed: null }, []],
    ["not listed, bcd's record", undefined, { joined: "10.0.0.1:6443", managed: "10.0.0.1:6443" }, [{ op: "reset" }]],
  ];
  for (const [name, desired, observed, out] of rows) {
    await t.step(name, () => {
      if (out instanceof RegExp) {
        assert.throws(
          () => planKubernetesJoin(desired, observed),
          (e) => e instanceof KubernetesJoinRefused && out.test(e.message),
        );
      } else assert.deepEqual(planKubernetesJoin(desired, observed), out);
    });
  }
});

/** A broker with one scripted answer per request, and the wake. */
function broker(...answers: SecretAnswer[]) {
  const asked: SecretQuery[] = [];
  let woke = Promise.withResolvers<void>();
  const src: SecretSource = {
    fetch: (q) => (asked.push(q), Promise.resolve(answers.shift() ?? { status: "unavailable", message: "none left" })),
  };
  return {
    src,
    asked,
    wake: () => woke.resolve(),
    woken: async () => {
      await woke.promise;
      woke = Promise.withResolvers<void>();
    },
  };
}

Deno.test("kubernetes-join driver: each answer of the broker, row by row", async (t) => {
  const enc = (s: string) => new TextEncoder().encode(s);
  const setup = (...answers: SecretAnswer[]) => {
    const port = new FakeKubernetes();
    port.clusters.set("10.0.0.1:6443", "abcdef.0123456789abcdef");
    const b = broker(...answers);
    const unit = kubernetesJoinUnit(port, { secrets: b.src, wake: b.wake });
    const desired = parseKubernetesJoinSettings(BASE);
    return { port, b, unit, desired };
  };
  await t.step("REFUSED: terminal, naming the reference; not joined", async () => {
    const { port, b, unit, desired } = setup({ status: "refused", message: "not bound to this node" });
    assert.match((await unit.converge(desired)).pending ?? "", /waiting for the join token: SecretRequest sent/);
    await b.woken();
    await assert.rejects(
      unit.converge(desired),
      (e) => e instanceof HostUnitError && e.terminal && /refused the join token k8s\/join: not bound/.test(e.message),
    );
    assert.equal(port.calls.length, 0);
  });
  await t.step("UNAVAILABLE: pending with the broker's words, asked again on the next pass", async () => {
    const { port, b, unit, desired } = setup(
      { status: "unavailable", message: "the secret broker is unavailable" },
      { status: "ok", secret: enc("abcdef.0123456789abcdef") },
    );
    await unit.converge(desired);
    await b.woken();
    assert.match((await unit.converge(desired)).pending ?? "", /waiting for the join token: the secret broker is/);
    assert.match((await unit.converge(desired)).pending ?? "", /SecretRequest sent/);
    await b.woken();
    assert.deepEqual(await unit.converge(desired), { steps: 1 });
    assert.equal(b.asked.length, 2);
    assert.equal(port.joined, "10.0.0.1:6443");
  });
  await t.step("a secret that is not a bootstrap token: terminal, without the value", async () => {
    const { port, b, unit, desired } = setup({ status: "ok", secret: enc("hunter2-password") });
    await unit.converge(desired);
    await b.woken();
    await assert.rejects(
      unit.converge(desired),
      (e) =>
        e instanceof HostUnitError && /is not a kubeadm bootstrap token/.test(e.message) && !/hunter2/.test(e.message),
    );
    assert.equal(port.calls.length, 0);
  });
  await t.step("no broker: the join waits, saying why", async () => {
    const unit = kubernetesJoinUnit(new FakeKubernetes());
    const r = await unit.converge(parseKubernetesJoinSettings(BASE));
    assert.match(r.pending ?? "", /this agent has no SecretRequest broker/);
  });
  await t.step("the token is used once: a failed join asks again on the next generation's pass", async () => {
    const { port, b, unit, desired } = setup(
      { status: "ok", secret: enc("zzzzzz.0000000000000000") },
      { status: "ok", secret: enc("abcdef.0123456789abcdef") },
    );
    await unit.converge(desired);
    await b.woken();
    await assert.rejects(unit.converge(desired), /kubeadm join failed/);
    assert.match((await unit.converge(desired)).pending ?? "", /SecretRequest sent/);
    await b.woken();
    assert.deepEqual(await unit.converge(desired), { steps: 1 });
    assert.deepEqual(port.calls.map((c) => c.op === "join" ? c.token : c.op), [
      "zzzzzz.0000000000000000",
      "abcdef.0123456789abcdef",
    ]);
  });
});
