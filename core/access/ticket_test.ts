import assert from "node:assert/strict";
import { b64url, jwksOf, newTicketSigner, signTicket, type TicketInit } from "../../fixtures/testbed/tickets.ts";
import { JwksHolder } from "./jwks.ts";
import { TicketRefused, verifyTicket } from "./ticket.ts";

const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);
const S = NOW / 1000;
const ed = await newTicketSigner("ed-1", "EdDSA");
const es = await newTicketSigner("es-1", "ES256");
const stranger = await newTicketSigner("ed-1", "EdDSA"); // same kid, another key
const jwks = new JwksHolder();
await jwks.take(jwksOf([ed, es]));
const want = { nodeId: "n1", instance: "i-1", port: 22, now: NOW };
const good: TicketInit = { aud: "n1", instance: "i-1", port: 22, exp: S + 60, nbf: S - 5, jti: "j-1" };

async function reason(ticket: string | Promise<string>, w = want): Promise<string> {
  try {
    await verifyTicket(await ticket, jwks, w);
  } catch (e) {
    if (e instanceof TicketRefused) return e.reason;
    throw e;
  }
  return "accepted";
}

Deno.test("verifyTicket() accepts EdDSA and ES256 tickets for this node, instance and port", async () => {
  const c = await verifyTicket(await signTicket(ed, good), jwks, want);
  assert.deepEqual(c, { jti: "j-1", expiresAt: (S + 60) * 1000, instance: "i-1", port: 22 });
  assert.equal(await reason(signTicket(es, { ...good, aud: ["other", "n1"] })), "accepted");
});

Deno.test("verifyTicket() refuses each hostile ticket with its check's reason", async (t) => {
  const [h, p] = (await signTicket(ed, good)).split(".") as [string, string, string];
  const rows: [string, string | Promise<string>, string][] = [
    ["expired", signTicket(ed, { ...good, exp: S - 1 }), "ticket-expired"],
    ["expiring this very millisecond", signTicket(ed, { ...good, exp: S }), "ticket-expired"],
    ["not yet valid (nbf after server time)", signTicket(ed, { ...good, nbf: S + 30 }), "ticket-not-yet-valid"],
    ["wrong audience", signTicket(ed, { ...good, aud: "n2" }), "ticket-wrong-audience"],
    ["audience missing", signTicket(ed, { ...good, aud: [] }), "ticket-wrong-audience"],
    ["another instance", signTicket(ed, { ...good, instance: "i-2" }), "ticket-wrong-instance"],
    ["another port", signTicket(ed, { ...good, port: 2222 }), "ticket-wrong-port"],
    ["unknown kid", signTicket(ed, good, { kid: "nope" }), "unknown-kid"],
    ["no kid", signTicket(ed, good, { kid: undefined }), "unknown-kid"],
    ["signed by another key under a known kid", signTicket(stranger, good), "ticket-bad-signature"],
    [
      "claims changed after signing",
      `${h}.${b64url(JSON.stringify({ ...good, aud: "n1", exp: S + 9999 }))}.${
        (await signTicket(ed, good)).split(".")[2]
      }`,
      "ticket-bad-signature",
    ],
    ["alg none", `${b64url('{"alg":"none","kid":"ed-1"}')}.${p}.`, "ticket-alg"],
    ["HS256 (a symmetric alg)", signTicket(ed, good, { alg: "HS256" }), "ticket-alg"],
    ["an ES256 header on an EdDSA key", signTicket(ed, good, { alg: "ES256" }), "ticket-alg"],
    ["two parts", `${h}.${p}`, "ticket-malformed"],
    ["a header that is not JSON", `${b64url("{")}.${p}.AA`, "ticket-malformed"],
    ["not base64url", `${h}.${p}.+/+/`, "ticket-malformed"],
    ["too long", `${h}.${p}.${"A".repeat(9000)}`, "ticket-malformed"],
    ["exp not a number", signTicket(ed, { ...good, exp: "soon" as unknown as number }), "ticket-malformed"],
    ["no jti", signTicket(ed, { ...good, jti: "" }), "ticket-malformed"],
  ];
  for (const [name, ticket, why] of rows) {
    await t.step(name, async () => assert.equal(await reason(ticket), why));
  }
});

Deno.test("verifyTicket() judges time by the server time it is given, not the host clock", async () => {
  const old = await signTicket(ed, { ...good, exp: S + 60 });
  assert.equal(await reason(old, { ...want, now: NOW + 61_000 }), "ticket-expired");
});
