import assert from "node:assert/strict";
import { packPayload, unpackResult } from "../../../proto/mod.ts";
import { silentLogger } from "../../log/mod.ts";
import { sha256, toHex } from "../../pki/ed25519.ts";
import { commandBody } from "../command.ts";
import { CommandFailed, InvalidPayload } from "../rejection.ts";
import { LogRing } from "./log_ring.ts";
import { daemonLogSource, journalSummarySource } from "./log_sources.ts";
import { logsCollectHandler, type Uploader, UploadError } from "./logs_collect.ts";

const fakeJournal = {
  meta: () =>
    Promise.resolve({
      nodeId: "node-1",
      journalId: "j1",
      eventSeq: 4,
      lastEpoch: 2,
      appliedGeneration: 7,
      serverTimeMark: 0,
      createdAt: 0,
    }),
  commandCounts: () => Promise.resolve({ done: 3 }),
  eventTotals: () =>
    Promise.resolve({
      metric: { count: 0, bytes: 0 },
      transition: { count: 1, bytes: 10 },
      result: { count: 0, bytes: 0 },
    }),
};

function ctx(payload: ReturnType<typeof packPayload>) {
  return {
    command: commandBody({
      id: "c",
      nodeId: "n",
      kind: "logs.collect",
      payload: { typeUrl: payload.type_url, value: payload.value },
    }),
    signal: new AbortController().signal,
    bootId: "boot-1",
    logger: silentLogger(),
  };
}

async function untar(bytes: Uint8Array): Promise<Record<string, string>> {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(`${dir}/a.tgz`, bytes);
    const out = await new Deno.Command("tar", { args: ["-xzf", `${dir}/a.tgz`, "-C", dir] }).output();
    assert.ok(out.success);
    const files: Record<string, string> = {};
    for await (const e of Deno.readDir(dir)) {
      if (e.name !== "a.tgz") files[e.name] = await Deno.readTextFile(`${dir}/${e.name}`);
    }
    return files;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("logs.collect uploads the recent logs and a journal summary as a tar.gz and reports its digest", async () => {
  const ring = new LogRing();
  ring.write('{"level":"info","msg":"started"}');
  const puts: { url: string; body: Uint8Array; type: string }[] = [];
  const uploader: Uploader = {
    put: (url, body, o) => (puts.push({ url, body, type: o.contentType }), Promise.resolve()),
  };
  const h = logsCollectHandler({ sources: [daemonLogSource(ring), journalSummarySource(fakeJournal)], uploader });
  const res = await h.run(ctx(packPayload("logs.collect", { upload_url: "https://bucket.example/obj?sig=1" })));
  const r = unpackResult("logs.collect", { type_url: res.result!.typeUrl, value: res.result!.value });
  assert.equal(puts.length, 1);
  assert.equal(puts[0]!.url, "https://bucket.example/obj?sig=1");
  assert.equal(puts[0]!.type, "application/gzip");
  assert.equal(r.uploaded_bytes, puts[0]!.body.length);
  assert.equal(r.sha256, toHex(await sha256(puts[0]!.body)));
  assert.deepEqual(r.included, ["daemon", "journal"]);
  assert.equal(r.truncated, false);
  const files = await untar(puts[0]!.body);
  assert.equal(files["daemon.log"], '{"level":"info","msg":"started"}\n');
  assert.equal(JSON.parse(files["journal-summary.json"]!).meta.appliedGeneration, 7);
});

Deno.test("logs.collect: only the sources asked for, unknown ones skipped, max_bytes truncates", async () => {
  const ring = new LogRing();
  for (let i = 0; i < 100; i++) ring.write(`line ${i}`);
  let body: Uint8Array = new Uint8Array();
  const uploader: Uploader = { put: (_u, b) => (body = b, Promise.resolve()) };
  const h = logsCollectHandler({ sources: [daemonLogSource(ring), journalSummarySource(fakeJournal)], uploader });
  const res = await h.run(ctx(packPayload("logs.collect", {
    upload_url: "https://b.example/o",
    sources: ["daemon", "unit:sshd.service"],
    max_bytes: 40,
  })));
  const r = unpackResult("logs.collect", { type_url: res.result!.typeUrl, value: res.result!.value });
  assert.deepEqual(r.included, ["daemon"]);
  assert.equal(r.truncated, true);
  assert.equal((await untar(body))["daemon.log"], "line 95\nline 96\nline 97\nline 98\nline 99\n");
});

Deno.test("logs.collect refuses a non-https URL as invalid-payload before collecting, and maps upload errors to codes", async () => {
  const h = logsCollectHandler({
    sources: [],
    uploader: { put: () => Promise.reject(new UploadError("upload-stalled", "less than 1 MiB in 2 minutes")) },
  });
  for (const url of ["http://bucket.example/o", "ftp://x/y", "not a url"]) {
    assert.throws(
      () => h.resources!(ctx(packPayload("logs.collect", { upload_url: url })).command),
      InvalidPayload,
      url,
    );
  }
  await assert.rejects(
    h.run(ctx(packPayload("logs.collect", { upload_url: "https://b.example/o" }))),
    (e) => e instanceof CommandFailed && e.code === "upload-stalled",
  );
});
