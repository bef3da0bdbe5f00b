import assert from "node:assert/strict";
import { checkArgs } from "./args.ts";
import { HelperError } from "./errors.ts";
import type { HelperOp } from "./protocol.ts";

const KUBE_JOIN = {
  apiServerEndpoint: "10.0.0.1:6443",
  caCertHashes: [`sha256:${"0f".repeat(32)}`],
  labels: {},
  taints: [],
  token: "abcdef.0123456789abcdef",
};

const refusals: { name: string; op: HelperOp; args: unknown; code: string; msg: RegExp }[] = [
  {
    name: "a sysctl key outside the allowlist",
    op: "sysctl.apply",
    args: { steps: [{ op: "set", key: "kernel.core_pattern", value: "|/bin/sh" }] },
    code: "invalid-argument",
    msg: /steps\[0\]\.key "kernel\.core_pattern" is not an allowed sysctl key/,
  },
  {
    name: "a path as a sysctl key",
    op: "sysctl.read",
    args: { keys: ["net/../../../etc/shadow"] },
    code: "invalid-argument",
    msg: /keys\[0\] .* is not an allowed sysctl key/,
  },
  {
    name: "a value on two lines",
    op: "sysctl.apply",
    args: { steps: [{ op: "set", key: "vm.swappiness", value: "1\nvm.x = 2" }] },
    code: "invalid-argument",
    msg: /steps\[0\]\.value .* is not one line/,
  },
  {
    name: "a restore carrying a value",
    op: "sysctl.apply",
    args: { steps: [{ op: "restore", key: "vm.swappiness", value: "1" }] },
    code: "unknown-field",
    msg: /unknown field steps\[0\]\.value/,
  },
  {
    name: "no steps",
    op: "sysctl.apply",
    args: { steps: [] },
    code: "invalid-argument",
    msg: /steps \[\] is not a list of 1 to 256/,
  },
  {
    name: "an unknown field",
    op: "hugepages.read",
    args: { path: "/sys" },
    code: "unknown-field",
    msg: /unknown field args\.path/,
  },
  {
    name: "a page size bcd does not manage",
    op: "hugepages.apply",
    args: { steps: [{ op: "set", size: "16G", count: 1 }] },
    code: "invalid-argument",
    msg: /steps\[0\]\.size "16G" is not one of 2M, 1G/,
  },
  {
    name: "a NUMA node as a string",
    op: "hugepages.apply",
    args: { steps: [{ op: "set", size: "2M", node: "0/../../", count: 1 }] },
    code: "invalid-argument",
    msg: /steps\[0\]\.node .* is not an integer from 0 to 1023/,
  },
  {
    name: "a negative count",
    op: "hugepages.apply",
    args: { steps: [{ op: "set", size: "2M", count: -1 }] },
    code: "invalid-argument",
    msg: /steps\[0\]\.count -1 is not an integer/,
  },
  ...[
    ["a path as the endpoint", { apiServerEndpoint: "/etc/kubernetes:6443" }, /apiServerEndpoint .* is not host:port/],
    ["an endpoint without a port", { apiServerEndpoint: "k8s.example" }, /apiServerEndpoint .* is not host:port/],
    ["an argv-looking endpoint", { apiServerEndpoint: "--config=/x:1" }, /apiServerEndpoint .* is not host:port/],
    ["no CA pin", { caCertHashes: [] }, /caCertHashes \[\] is not a list of 1 to 16/],
    ["a CA pin of another hash", { caCertHashes: ["md5:00"] }, /caCertHashes "md5:00" is not sha256/],
    ["a node name with a slash", { nodeName: "../n" }, /nodeName .* is not a DNS subdomain/],
    ["a label the kubelet refuses", { labels: { "node-role.kubernetes.io/master": "" } }, /namespaces the kubelet/],
    ["a label value with a space", { labels: { a: "b c" } }, /labels .* not a label value/],
    ["a taint with an unknown effect", { taints: [{ key: "k", effect: "Evict" }] }, /taints\[0\] .* effect/],
    ["a taint with an extra key", { taints: [{ key: "k", effect: "NoSchedule", op: 1 }] }, /unknown key op/],
  ].map(([name, over, msg]) => ({
    name: `kube.join: ${name}`,
    op: "kube.join" as const,
    args: { ...KUBE_JOIN, ...over as object },
    code: "invalid-argument",
    msg: msg as RegExp,
  })),
  {
    name: "kube.join: an unknown field (a config path)",
    op: "kube.join",
    args: { ...KUBE_JOIN, config: "/tmp/x.yaml" },
    code: "unknown-field",
    msg: /unknown field args\.config/,
  },
];

Deno.test("kube.join refuses a token that is not a bootstrap token without showing it", () => {
  for (const token of ["abcdef.0123456789abcdeX", "secret-value-that-must-not-show", 7]) {
    assert.throws(
      () => checkArgs("kube.join", { ...KUBE_JOIN, token }),
      (e) =>
        e instanceof HelperError && e.code === "invalid-argument" && /token is not a bootstrap token/.test(e.message) &&
        !e.message.includes(String(token)),
    );
  }
});

Deno.test("the host unit ops refuse, row by row, naming op, field and value", async (t) => {
  for (const r of refusals) {
    await t.step(r.name, () => {
      assert.throws(
        () => checkArgs(r.op, r.args),
        (e) => e instanceof HelperError && e.code === r.code && r.msg.test(e.message) && e.message.includes(r.op),
      );
    });
  }
});

Deno.test("the host unit ops return exactly the checked steps", () => {
  assert.deepEqual(
    checkArgs("hugepages.apply", {
      steps: [{ op: "set", size: "2M", node: 1, count: 8 }, { op: "restore", size: "1G" }],
    }),
    { steps: [{ op: "set", size: "2M", node: 1, count: 8 }, { op: "restore", size: "1G" }] },
  );
  assert.deepEqual(checkArgs("sysctl.read", { keys: ["net.core.somaxconn"] }), { keys: ["net.core.somaxconn"] });
});
