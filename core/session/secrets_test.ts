import assert from "node:assert/strict";
import { bcd } from "../../proto/mod.ts";
import { SessionSecrets } from "./secrets.ts";
import type { NodeFrameInit } from "./client.ts";

const Q = { purpose: "user-data", ref: "ud-1", allocationId: "alloc-1", instanceId: "i-1" };
const S = bcd.v1.SecretResponse.Status;

function attached() {
  const secrets = new SessionSecrets();
  const sent: NodeFrameInit[] = [];
  secrets.attach((f) => (sent.push(f), true));
  const lastId = () => sent.at(-1)?.secret_request?.request_id ?? "";
  return { secrets, sent, lastId };
}

Deno.test("SessionSecrets sends a SecretRequest bound to the allocation and hands back the answer with its request id", async (t) => {
  await t.step("OK gives the secret", async () => {
    const { secrets, sent, lastId } = attached();
    const p = secrets.fetch(Q);
    assert.deepEqual({ ...sent[0]!.secret_request, request_id: "x" }, {
      request_id: "x",
      purpose: "user-data",
      ref: "ud-1",
      allocation_id: "alloc-1",
      instance_id: "i-1",
    });
    secrets.response({ request_id: lastId(), status: S.OK, secret: new Uint8Array([7, 8]) });
    assert.deepEqual(await p, { status: "ok", secret: new Uint8Array([7, 8]) });
  });
  await t.step("a command's secret (bmc-credential) carries the command it is bound to", async () => {
    const { secrets, sent, lastId } = attached();
    const p = secrets.fetch({
      purpose: "bmc-credential",
      ref: "bmc/r1",
      allocationId: "",
      instanceId: "",
      commandId: "c-9",
    });
    assert.deepEqual({ ...sent[0]!.secret_request, request_id: "x" }, {
      request_id: "x",
      purpose: "bmc-credential",
      ref: "bmc/r1",
      allocation_id: "",
      instance_id: "",
      command_id: "c-9",
    });
    secrets.response({ request_id: lastId(), status: S.OK, secret: new Uint8Array([1]) });
    assert.equal((await p).status, "ok");
  });
  await t.step("REFUSED is a refusal with the control plane's message", async () => {
    const { secrets, lastId } = attached();
    const p = secrets.fetch(Q);
    secrets.response({ request_id: lastId(), status: S.REFUSED, message: "not bound to this node" });
    assert.deepEqual(await p, { status: "refused", message: "not bound to this node" });
  });
  await t.step("UNAVAILABLE and an unknown status are unavailability", async () => {
    const { secrets, lastId } = attached();
    const p = secrets.fetch(Q);
    secrets.response({ request_id: lastId(), status: S.UNAVAILABLE, message: "broker down" });
    assert.deepEqual(await p, { status: "unavailable", message: "broker down" });
    const q = secrets.fetch(Q);
    secrets.response({ request_id: lastId(), status: 99 as bcd.v1.SecretResponse.Status });
    assert.equal((await q).status, "unavailable");
  });
  await t.step("an answer with another id settles nothing", async () => {
    const { secrets, lastId } = attached();
    const p = secrets.fetch(Q);
    secrets.response({ request_id: "secret-unknown", status: S.OK, secret: new Uint8Array([1]) });
    secrets.response({ request_id: lastId(), status: S.REFUSED, message: "no" });
    assert.equal((await p).status, "refused");
  });
});

Deno.test("SessionSecrets is unavailable without a session, when the session closes first, or when the send fails", async () => {
  const lone = new SessionSecrets();
  assert.deepEqual(await lone.fetch(Q), { status: "unavailable", message: "no session to the control plane" });
  const { secrets } = attached();
  const p = secrets.fetch(Q);
  secrets.detach("shutdown");
  assert.deepEqual(await p, { status: "unavailable", message: "the session closed before the answer: shutdown" });
  assert.equal((await secrets.fetch(Q)).status, "unavailable", "detached: no session");
  const full = new SessionSecrets();
  full.attach(() => false);
  assert.match(JSON.stringify(await full.fetch(Q)), /could not take the request/);
});

Deno.test("SessionSecrets: a request nobody answers is unavailable once its timeout has passed", async () => {
  const secrets = new SessionSecrets({ timeoutMs: 1 });
  secrets.attach(() => true);
  const a = await secrets.fetch(Q);
  assert.equal(a.status, "unavailable");
  assert.match(a.status === "unavailable" ? a.message : "", /no answer to SecretRequest secret-.* within 1 ms/);
});
