/**
 * The `bmc.*` handlers against the fake BMC (`fixtures/redfish/fake_bmc.ts`, the recorded `public-rackmount1` tree)
 * over TLS pinned by the leaf's SHA-256, with credentials from a map-backed SecretSource. The same kinds run against
 * sushy-tools on the shared libvirtd in `deno task test:site` (`fixtures/redfish/site_suite.ts`).
 */
import assert from "node:assert/strict";
import { CommandFailed, InvalidPayload } from "../../../core/commands/rejection.ts";
import { bcd, unpackResult } from "../../../proto/mod.ts";
import { FakeBmc, type FakeBmcOptions } from "../../../fixtures/redfish/fake_bmc.ts";
import { makeCerts } from "../../host/certs_testing.ts";
import { BmcHostBook } from "../bmc_hosts.ts";
import { BMC_CREDENTIAL_PURPOSE } from "../bmc_target.ts";
import { bmcContext, MapSecrets, pemSha256, steppingClock } from "../redfish_testing.ts";
import { bmcBootHandler } from "./bmc_boot.ts";
import { bmcFirmwareHandler } from "./bmc_firmware.ts";
import { bmcPowerHandler } from "./bmc_power.ts";
import { bmcQueryHandler } from "./bmc_query.ts";
import { bmcRotateHandler } from "./bmc_rotate.ts";
import { bmcStorageHandler } from "./bmc_storage.ts";

const certs = await makeCerts();
const why = certs === null ? "openssl is absent: no certificate for the fake BMC" : undefined;
if (why) console.warn(`skipping the bmc.* kinds on the fake BMC: ${why}`);
const SYSTEM = "/redfish/v1/Systems/437XR1138R2";

interface Rig {
  bmc: FakeBmc;
  secrets: MapSecrets;
  hosts: BmcHostBook;
  clock: ReturnType<typeof steppingClock>;
  target: { host: string; port: number; credential_ref: string; cert_sha256: string };
  dir: string;
}

async function rig(o: FakeBmcOptions = {}): Promise<Rig & AsyncDisposable> {
  const bmc = await FakeBmc.start({ tls: { cert: certs!.cert, key: certs!.key }, ...o });
  const dir = await Deno.makeTempDir({ prefix: "bcd-bmc-kinds-" });
  const secrets = new MapSecrets().put("cred/admin", "Administrator", "secret");
  return {
    bmc,
    secrets,
    hosts: new BmcHostBook(dir),
    clock: steppingClock(),
    target: { host: "127.0.0.1", port: bmc.port, credential_ref: "cred/admin", cert_sha256: pemSha256(certs!.cert) },
    dir,
    async [Symbol.asyncDispose]() {
      await bmc.stop();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

function ports(r: Rig) {
  return { secrets: r.secrets, hosts: r.hosts, clock: r.clock, power: { pollMs: 1000 } };
}

async function failure(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (e instanceof CommandFailed || e instanceof InvalidPayload) return e.code;
    throw e;
  }
  return "succeeded";
}

Deno.test({
  name: "bmc.query answers the system's recorded fields, records the BMC host and asks for its credential by command",
  ignore: why !== undefined,
  async fn() {
    await using r = await rig();
    const { ctx } = bmcContext("bmc.query", { target: r.target }, "cmd-q1");
    const out = await bmcQueryHandler(ports(r)).run(ctx);
    const res = unpackResult("bmc.query", { type_url: out.result!.typeUrl, value: out.result!.value });
    assert.deepEqual(
      [res.power_state, res.manufacturer, res.model, res.serial, res.health, res.boot_override],
      ["On", "Contoso", "3500", "437XR1138R2", "OK", "Pxe"],
    );
    assert.equal(res.bios_version, "P79 v1.45 (12/06/2017)");
    assert.equal(res.bmc_firmware_version, "1.45.455b66-rev4");
    assert.deepEqual(res.nic_macs, ["12:44:6a:3b:04:11", "aa:bb:cc:dd:ee:00", "aa:bb:cc:dd:ee:fe"]); // VLAN1 repeats one
    assert.deepEqual((await r.hosts.list()).map((h) => [h.host, h.port, h.last_kind]), [[
      "127.0.0.1",
      r.bmc.port,
      "bmc.query",
    ]]);
    assert.deepEqual(r.secrets.queries, [{
      purpose: BMC_CREDENTIAL_PURPOSE,
      ref: "cred/admin",
      allocationId: "",
      instanceId: "",
      commandId: "cmd-q1",
    }]);
    assert(
      !r.bmc.requests.some((q) => q.method !== "GET" && !q.path.includes("SessionService")),
      "query changed nothing",
    );
  },
});

Deno.test({
  name: "bmc.* fails with the credential's reason and has recorded the host first",
  ignore: why !== undefined,
  async fn(t) {
    await using r = await rig();
    await t.step("refused: bmc-credential-refused, nothing sent", async () => {
      r.secrets.refused.add("cred/admin");
      const { ctx } = bmcContext("bmc.query", { target: r.target });
      assert.equal(await failure(bmcQueryHandler(ports(r)).run(ctx)), "bmc-credential-refused");
      assert.equal(r.bmc.requests.length, 0);
      assert(await r.hosts.has("127.0.0.1"));
      r.secrets.refused.clear();
    });
    await t.step("unavailable: bmc-credential-unavailable", async () => {
      const { ctx } = bmcContext("bmc.query", { target: { ...r.target, credential_ref: "cred/none" } });
      assert.equal(await failure(bmcQueryHandler(ports(r)).run(ctx)), "bmc-credential-unavailable");
    });
    await t.step("not a {username, password} object: bmc-credential-invalid", async () => {
      r.secrets.secrets.set("cred/bad", "hunter2");
      const { ctx } = bmcContext("bmc.query", { target: { ...r.target, credential_ref: "cred/bad" } });
      assert.equal(await failure(bmcQueryHandler(ports(r)).run(ctx)), "bmc-credential-invalid");
    });
    await t.step("a wrong password: bmc-auth", async () => {
      r.secrets.put("cred/wrong", "Administrator", "nope");
      const { ctx } = bmcContext("bmc.query", { target: { ...r.target, credential_ref: "cred/wrong" } });
      assert.equal(await failure(bmcQueryHandler(ports(r)).run(ctx)), "bmc-auth");
    });
    await t.step("another leaf certificate: bmc-tls", async () => {
      const { ctx } = bmcContext("bmc.query", { target: { ...r.target, cert_sha256: "ab".repeat(32) } });
      assert.equal(await failure(bmcQueryHandler(ports(r)).run(ctx)), "bmc-tls");
    });
  },
});

Deno.test("bmc.* refuses a target that is not one with invalid-payload", async (t) => {
  const secrets = new MapSecrets();
  const dir = await Deno.makeTempDir();
  const h = bmcQueryHandler({ secrets, hosts: new BmcHostBook(dir) });
  const base = { host: "10.0.0.5", port: 443, credential_ref: "c" };
  const rows: [string, Record<string, unknown>][] = [
    ["no host", { ...base, host: "" }],
    ["a URL for a host", { ...base, host: "https://10.0.0.5/" }],
    ["a path in the host", { ...base, host: "bmc/../x" }],
    ["a port past 65535", { ...base, port: 70000 }],
    ["no credential reference", { ...base, credential_ref: "" }],
    ["a short fingerprint", { ...base, cert_sha256: "abcd" }],
    ["a CA that is not PEM", { ...base, ca_pem: "hello" }],
    ["a system id with a slash", { ...base, system_id: "../Managers" }],
  ];
  for (const [name, target] of rows) {
    await t.step(name, () => {
      const { ctx } = bmcContext("bmc.query", { target });
      assert.throws(() => h.resources!(ctx.command), InvalidPayload);
    });
  }
  assert.equal(secrets.queries.length, 0);
  await Deno.remove(dir, { recursive: true });
});

Deno.test({
  name: "bmc.power sends the reset and reads the power state back, row by row",
  ignore: why !== undefined,
  async fn(t) {
    const rows: {
      name: string;
      opts?: FakeBmcOptions;
      before: string;
      action: string;
      after: string;
      resets: string[];
      message?: RegExp;
    }[] = [
      { name: "ForceOff from On", before: "On", action: "ForceOff", after: "Off", resets: ["ForceOff"] },
      { name: "On from Off", before: "Off", action: "On", after: "On", resets: ["On"] },
      { name: "On when On sends nothing", before: "On", action: "On", after: "On", resets: [], message: /already On/ },
      { name: "ForceRestart ends On", before: "On", action: "ForceRestart", after: "On", resets: ["ForceRestart"] },
      {
        name: "GracefulShutdown the OS honours",
        before: "On",
        action: "GracefulShutdown",
        after: "Off",
        resets: ["GracefulShutdown"],
      },
      {
        name: "GracefulShutdown the OS ignores falls back to ForceOff",
        opts: { ignoreGraceful: true },
        before: "On",
        action: "GracefulShutdown",
        after: "Off",
        resets: ["GracefulShutdown", "ForceOff"],
        message: /ForceOff sent/,
      },
    ];
    for (const row of rows) {
      await t.step(row.name, async () => {
        await using r = await rig(row.opts);
        r.bmc.touch(SYSTEM, { PowerState: row.before });
        const { ctx } = bmcContext("bmc.power", { target: r.target, action: row.action });
        const out = await bmcPowerHandler(ports(r)).run(ctx);
        const res = unpackResult("bmc.power", { type_url: out.result!.typeUrl, value: out.result!.value });
        assert.deepEqual([res.previous_power_state, res.power_state], [row.before, row.after]);
        const sent = r.bmc.requests.filter((q) => q.path.endsWith("ComputerSystem.Reset"))
          .map((q) => (q.body as { ResetType: string }).ResetType);
        assert.deepEqual(sent, row.resets);
        if (row.message) assert.match(out.message ?? "", row.message);
      });
    }
    await t.step("an action outside the kind's list is invalid-payload", async () => {
      await using r = await rig();
      const { ctx } = bmcContext("bmc.power", { target: r.target, action: "Explode" });
      assert.equal(await failure(bmcPowerHandler(ports(r)).run(ctx)), "invalid-payload");
    });
    await t.step("a ResetType the system does not allow is bmc-refused before anything is sent", async () => {
      await using r = await rig();
      const { ctx } = bmcContext("bmc.power", { target: r.target, action: "PowerCycle" });
      assert.equal(await failure(bmcPowerHandler(ports(r)).run(ctx)), "bmc-refused");
      assert(!r.bmc.requests.some((q) => q.method === "POST" && q.path.endsWith("Reset")));
    });
    await t.step("a state that never reads back is bmc-power-unverified, naming the state read", async () => {
      await using r = await rig({ stuckPower: true });
      const { ctx } = bmcContext("bmc.power", { target: r.target, action: "ForceOff" });
      const h = bmcPowerHandler({ ...ports(r), power: { pollMs: 1000, verifyWithinMs: 5000 } });
      const e = await h.run(ctx).catch((e) => e);
      assert(e instanceof CommandFailed && e.code === "bmc-power-unverified", String(e));
      assert.match(e.message, /PowerState "On"/);
      assert.deepEqual(r.clock.slept, [1000, 1000, 1000, 1000, 1000]);
    });
  },
});

Deno.test({
  name: "bmc.boot sets the override with If-Match and reads it back; virtual media goes in and out",
  ignore: why !== undefined,
  async fn(t) {
    await using r = await rig();
    const h = bmcBootHandler(ports(r));
    await t.step("Hdd, continuous", async () => {
      const { ctx } = bmcContext("bmc.boot", { target: r.target, device: "Hdd", persistent: true });
      const out = await h.run(ctx);
      const res = unpackResult("bmc.boot", { type_url: out.result!.typeUrl, value: out.result!.value });
      assert.deepEqual([res.device, res.persistent], ["Hdd", true]);
      const boot = r.bmc.resource(SYSTEM)!.Boot as Record<string, unknown>;
      assert.deepEqual([boot.BootSourceOverrideTarget, boot.BootSourceOverrideEnabled], ["Hdd", "Continuous"]);
      const patch = r.bmc.requests.find((q) => q.method === "PATCH" && q.path === SYSTEM);
      assert.match(patch?.ifMatch ?? "", /^W\/"\d+"$/);
    });
    await t.step("Cd once with an ISO on virtual media", async () => {
      const iso = "https://boot.site.example/images/ramdisk.iso";
      const { ctx } = bmcContext("bmc.boot", { target: r.target, device: "Cd", virtual_media_url: iso });
      const out = await h.run(ctx);
      const res = unpackResult("bmc.boot", { type_url: out.result!.typeUrl, value: out.result!.value });
      assert.equal(res.virtual_media_url, iso);
      assert.equal(r.bmc.resource(`${SYSTEM}/VirtualMedia/CD1`)!.Image, iso);
      assert.equal((r.bmc.resource(SYSTEM)!.Boot as Record<string, unknown>).BootSourceOverrideEnabled, "Once");
    });
    await t.step("eject", async () => {
      const { ctx } = bmcContext("bmc.boot", { target: r.target, eject_virtual_media: true });
      const out = await h.run(ctx);
      const res = unpackResult("bmc.boot", { type_url: out.result!.typeUrl, value: out.result!.value });
      assert.equal(res.virtual_media_url, "");
      assert.equal(r.bmc.resource(`${SYSTEM}/VirtualMedia/CD1`)!.Inserted, false);
    });
    const refusals: [string, Record<string, unknown>, string][] = [
      ["a device outside the kind's list", { device: "Floppy" }, "invalid-payload"],
      ["nothing asked", {}, "invalid-payload"],
      [
        "insert and eject at once",
        { virtual_media_url: "https://x/a.iso", eject_virtual_media: true },
        "invalid-payload",
      ],
      ["an image URL with credentials", { virtual_media_url: "https://u:p@x/a.iso" }, "invalid-payload"],
      ["a file: image URL", { virtual_media_url: "file:///etc/shadow" }, "invalid-payload"],
      ["a device the system does not allow", { device: "UefiHttp" }, "bmc-refused"],
    ];
    for (const [name, p, code] of refusals) {
      await t.step(name, async () => {
        const { ctx } = bmcContext("bmc.boot", { target: r.target, ...p });
        assert.equal(await failure(h.run(ctx)), code);
      });
    }
    await t.step("a system changed since it was read: bmc-etag-mismatch, and the other change stands", async () => {
      r.bmc.raceNextPatch(SYSTEM);
      const before = structuredClone(r.bmc.resource(SYSTEM)!.Boot);
      const { ctx } = bmcContext("bmc.boot", { target: r.target, device: "Pxe" });
      assert.equal(await failure(h.run(ctx)), "bmc-etag-mismatch");
      assert.deepEqual(r.bmc.resource(SYSTEM)!.Boot, before);
    });
  },
});

Deno.test({
  name: "bmc.rotate sets the new password, proves it by logging in, and the old one no longer works; no secret leaks",
  ignore: why !== undefined,
  async fn(t) {
    await using r = await rig();
    r.secrets.put("cred/admin-2", undefined, "n3w-S3cret!");
    const { ctx, lines } = bmcContext("bmc.rotate", {
      target: r.target,
      username: "Administrator",
      new_credential_ref: "cred/admin-2",
    }, "cmd-rot");
    const out = await bmcRotateHandler(ports(r)).run(ctx);
    const res = unpackResult("bmc.rotate", { type_url: out.result!.typeUrl, value: out.result!.value });
    assert.deepEqual([res.username, res.credential_ref, res.rotated], ["Administrator", "cred/admin-2", true]);
    await t.step("the BMC holds the new password; the old one is refused", async () => {
      assert.equal(r.bmc.passwords.get("Administrator"), "n3w-S3cret!");
      const { ctx } = bmcContext("bmc.query", { target: r.target }); // cred/admin: the old password
      assert.equal(await failure(bmcQueryHandler(ports(r)).run(ctx)), "bmc-auth");
      const ok = bmcContext("bmc.query", { target: { ...r.target, credential_ref: "cred/admin-2x" } });
      r.secrets.put("cred/admin-2x", "Administrator", "n3w-S3cret!");
      await bmcQueryHandler(ports(r)).run(ok.ctx);
    });
    await t.step("the proof was a login with the new password after the PATCH", () => {
      const i = r.bmc.requests.findIndex((q) =>
        q.method === "PATCH" && q.path === "/redfish/v1/AccountService/Accounts/1"
      );
      assert(i >= 0);
      assert.match(r.bmc.requests[i]!.ifMatch ?? "", /^W\//);
      assert(
        r.bmc.requests.slice(i + 1).some((q) =>
          q.method === "POST" && q.path === "/redfish/v1/SessionService/Sessions"
        ),
      );
    });
    await t.step("neither the result nor a log line holds a password", () => {
      const text = JSON.stringify(lines) + new TextDecoder().decode(out.result!.value) + (out.message ?? "");
      assert(!text.includes("n3w-S3cret!") && !text.includes('secret"'), text);
      assert(lines.some((l) => l.msg === "bmc password rotated"));
    });
    await t.step("an account the BMC does not have: bmc-account-missing", async () => {
      r.secrets.put("cred/x", undefined, "pw-x");
      const { ctx } = bmcContext("bmc.rotate", {
        target: { ...r.target, credential_ref: "cred/admin-2x" },
        username: "nobody",
        new_credential_ref: "cred/x",
      });
      assert.equal(await failure(bmcRotateHandler(ports(r)).run(ctx)), "bmc-account-missing");
    });
    await t.step("the same reference twice is invalid-payload", () => {
      const { ctx } = bmcContext("bmc.rotate", {
        target: r.target,
        username: "Administrator",
        new_credential_ref: "cred/admin",
      });
      assert.throws(() => bmcRotateHandler(ports(r)).resources!(ctx.command), InvalidPayload);
    });
  },
});

Deno.test({
  name:
    "bmc.firmware checks the image's digest first, then SimpleUpdate through the task monitor, and reads the version back",
  ignore: why !== undefined,
  async fn(t) {
    const image = new TextEncoder().encode("firmware image v2\n".repeat(1000));
    const sha = Array.from(
      new Uint8Array(await crypto.subtle.digest("SHA-256", image)),
      (b) => b.toString(16).padStart(2, "0"),
    ).join("");
    const images = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => new Response(image));
    const imageUrl = `http://127.0.0.1:${images.addr.port}/fw/bmc-2.0.0.bin`;
    try {
      await t.step("the update runs as a task and the version moves", async () => {
        await using r = await rig({ taskPolls: 2 });
        const { ctx } = bmcContext("bmc.firmware", {
          target: r.target,
          image_url: imageUrl,
          sha256: sha,
          component: "BMC",
        });
        const out = await bmcFirmwareHandler(ports(r)).run(ctx);
        const res = unpackResult("bmc.firmware", { type_url: out.result!.typeUrl, value: out.result!.value });
        assert.deepEqual([res.previous_version, res.version, res.task_id], ["1.45.455b66-rev4", "2.0.0", "545"]);
        const post = r.bmc.requests.find((q) => q.path === "/redfish/v1/UpdateService/Actions/SimpleUpdate");
        assert.deepEqual(post?.body, {
          ImageURI: imageUrl,
          TransferProtocol: "HTTP",
          Targets: ["/redfish/v1/UpdateService/FirmwareInventory/BMC"],
        });
        assert.deepEqual(r.clock.slept, [1000, 1000]);
      });
      await t.step("a digest that does not match fails before the BMC is asked anything", async () => {
        await using r = await rig();
        const { ctx } = bmcContext("bmc.firmware", {
          target: r.target,
          image_url: imageUrl,
          sha256: "0".repeat(64),
          component: "BMC",
        });
        assert.equal(await failure(bmcFirmwareHandler(ports(r)).run(ctx)), "firmware-digest-mismatch");
        assert.equal(r.bmc.requests.length, 0);
        assert.equal(r.secrets.queries.length, 0);
      });
      await t.step("a component the inventory lacks: firmware-component-missing", async () => {
        await using r = await rig();
        const { ctx } = bmcContext("bmc.firmware", {
          target: r.target,
          image_url: imageUrl,
          sha256: sha,
          component: "NIC9",
        });
        assert.equal(await failure(bmcFirmwareHandler(ports(r)).run(ctx)), "firmware-component-missing");
        assert(!r.bmc.requests.some((q) => q.method === "POST" && q.path.includes("SimpleUpdate")));
      });
      await t.step("plain http beyond loopback, a short digest: invalid-payload", async () => {
        await using r = await rig();
        for (
          const p of [{ image_url: "http://10.0.0.9/fw.bin", sha256: sha }, { image_url: imageUrl, sha256: "abc" }]
        ) {
          const { ctx } = bmcContext("bmc.firmware", { target: r.target, component: "BMC", ...p });
          assert.throws(() => bmcFirmwareHandler(ports(r)).resources!(ctx.command), InvalidPayload);
        }
      });
    } finally {
      await images.shutdown();
    }
  },
});

Deno.test({
  name: "bmc.storage creates, deletes and resets volumes of the system's RAID controller, each refusal named",
  ignore: why !== undefined,
  async fn(t) {
    const Op = bcd.v1.BmcStoragePayload.Operation;
    const CTL = `${SYSTEM}/Storage/RAID.1`;
    const run = async (r: Rig, p: Record<string, unknown>) => {
      const { ctx } = bmcContext("bmc.storage", { target: r.target, ...p });
      const out = await bmcStorageHandler({ ...ports(r), storage: { pollMs: 1000 } }).run(ctx);
      return unpackResult("bmc.storage", { type_url: out.result!.typeUrl, value: out.result!.value });
    };
    const create = {
      operation: Op.CREATE_VOLUME,
      controller_id: "raid.1",
      volume_name: "data",
      raid_type: "RAID1",
      drive_ids: ["Disk.Bay.0", "Disk.Bay.1"],
    };
    await t.step(
      "CREATE_VOLUME posts RAIDType, its VolumeType and the drives' links; the new volume is named",
      async () => {
        await using r = await rig({ storage: true });
        const res = await run(r, create);
        assert.deepEqual(res.volume_ids, ["2"]);
        const post = r.bmc.requests.find((q) => q.method === "POST" && q.path === `${CTL}/Volumes`);
        assert.deepEqual(post?.body, {
          Name: "data",
          RAIDType: "RAID1",
          VolumeType: "Mirrored",
          Links: { Drives: [{ "@odata.id": `${CTL}/Drives/Disk.Bay.0` }, { "@odata.id": `${CTL}/Drives/Disk.Bay.1` }] },
        });
        assert.equal(r.bmc.resource(`${CTL}/Volumes/2`)?.Name, "data");
      },
    );
    await t.step("behind a task monitor: followed to its end, the volume and the monitor named", async () => {
      await using r = await rig({ storage: true, storageTasks: true, taskPolls: 1 });
      const res = await run(r, { ...create, capacity_bytes: 1024 ** 3 });
      assert.deepEqual([res.volume_ids, res.task_id], [["2"], "/redfish/v1/TaskService/TaskMonitors/1"]);
      assert.equal(r.bmc.resource(`${CTL}/Volumes/2`)?.CapacityBytes, 1024 ** 3);
      assert.deepEqual(r.clock.slept, [1000]);
    });
    await t.step("DELETE_VOLUME removes the one named; RESET_CONFIGURATION removes all", async () => {
      await using r = await rig({ storage: true });
      await run(r, create);
      assert.deepEqual((await run(r, { operation: Op.DELETE_VOLUME, volume_id: "1" })).volume_ids, ["1"]);
      assert.equal(r.bmc.resource(`${CTL}/Volumes/1`), undefined);
      assert.ok(r.bmc.resource(`${CTL}/Volumes/2`));
      await run(r, create);
      assert.deepEqual((await run(r, { operation: Op.RESET_CONFIGURATION })).volume_ids, ["2", "3"]);
      assert.deepEqual(r.bmc.resource(`${CTL}/Volumes`)?.Members, []);
    });
    await t.step("refusals: a missing controller, drive or volume, and a system without Storage", async () => {
      await using r = await rig({ storage: true });
      const fails = async (p: Record<string, unknown>) => {
        const { ctx } = bmcContext("bmc.storage", { target: r.target, ...p });
        return await failure(bmcStorageHandler(ports(r)).run(ctx));
      };
      assert.equal(await fails({ ...create, controller_id: "RAID.9" }), "storage-controller-missing");
      assert.equal(await fails({ ...create, drive_ids: ["Disk.Bay.7"] }), "storage-drive-missing");
      assert.equal(await fails({ operation: Op.DELETE_VOLUME, volume_id: "9" }), "storage-volume-missing");
      assert(!r.bmc.requests.some((q) => q.path.includes("Volumes") && ["POST", "DELETE"].includes(q.method)));
      await using bare = await rig();
      const { ctx } = bmcContext("bmc.storage", { target: bare.target, ...create });
      assert.equal(await failure(bmcStorageHandler(ports(bare)).run(ctx)), "storage-controller-missing");
    });
    await t.step("a bad payload: invalid-payload before the BMC is asked", async () => {
      await using r = await rig({ storage: true });
      for (
        const p of [
          { operation: Op.OPERATION_UNSPECIFIED },
          { ...create, raid_type: "RAID7" },
          { ...create, drive_ids: [] },
          { ...create, volume_name: "" },
          { ...create, controller_id: "../x" },
          { operation: Op.DELETE_VOLUME, volume_id: "" },
        ]
      ) {
        const { ctx } = bmcContext("bmc.storage", { target: r.target, ...p });
        assert.throws(() => bmcStorageHandler(ports(r)).resources!(ctx.command), InvalidPayload, JSON.stringify(p));
      }
      assert.equal(r.bmc.requests.length, 0);
    });
  },
});
