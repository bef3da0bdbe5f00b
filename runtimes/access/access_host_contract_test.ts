/**
 * The {@link AccessHost} contract, run against the in-memory fake, the real files (real `ssh-keygen -k`, real
 * `sshd -t`) and the node's helper-backed port over an in-process helper serving the real files.
 */
import assert from "node:assert/strict";
import { type AccessFiles, accessFilesMatch, type AccessHost, NO_ACCESS_FILES } from "../../core/access/mod.ts";
import { FakeAccessHost } from "../../core/access/fake_host.ts";
import { ed25519Line, p256Line } from "../../core/access/keys_testing.ts";
import { HelperError } from "../../core/helper/mod.ts";
import { HelperAccessHost } from "../helper/access_port.ts";
import { startTestHelper } from "../helper/helper_testing.ts";
import { filesUnder, ignoreWithoutSshd, makeSshDir, SSHD } from "./sshd_testing.ts";
import { SshdAccessFiles } from "./sshd_files.ts";

interface Subject {
  readonly host: AccessHost;
  reloads(): Promise<number>;
  /** Makes the next check of a new drop-in fail. */
  breakCheck(): Promise<void>;
  /** Every file the host holds, by name. */
  files(): Promise<Map<string, string>>;
  cleanup(): Promise<void>;
}

const fake = (): Promise<Subject> => {
  const host = new FakeAccessHost();
  return Promise.resolve({
    host,
    reloads: () => Promise.resolve(host.reloads),
    breakCheck: () => Promise.resolve(void (host.failNextCheck = "Bad configuration option")),
    files: () => Promise.resolve(new Map(host.files)),
    cleanup: () => Promise.resolve(),
  });
};

async function real(overHelper: boolean): Promise<Subject> {
  const ssh = await makeSshDir();
  const counter = `${ssh.dir}/reloads.count`;
  const direct = new SshdAccessFiles({
    sshDir: ssh.dir,
    sshdConfig: ssh.sshdConfig,
    sshd: SSHD,
    reload: { command: ["/bin/sh", "-c", `echo reload >> '${counter}'`] },
  });
  const helper = overHelper ? await startTestHelper({ access: direct }) : undefined;
  const skip = ["sshd_config", "ssh_host_ed25519_key", "ssh_host_ed25519_key.pub", "reloads.count"];
  return {
    host: helper ? new HelperAccessHost(helper.client) : direct,
    reloads: async () => (await Deno.readTextFile(counter).catch(() => "")).split("\n").filter(Boolean).length,
    breakCheck: () => ssh.writeConfig("NoSuchOption yes"),
    files: () => filesUnder(ssh.dir, skip),
    cleanup: async () => {
      await helper?.close();
      await ssh.cleanup();
    },
  };
}

const SUBJECTS: readonly [string, () => Promise<Subject>, boolean][] = [
  ["FakeAccessHost", fake, false],
  ["SshdAccessFiles (real ssh-keygen, sshd -t)", () => real(false), ignoreWithoutSshd("SshdAccessFiles contract")],
  [
    "HelperAccessHost over the helper (real files)",
    () => real(true),
    ignoreWithoutSshd("HelperAccessHost contract"),
  ],
];

const CA1 = await ed25519Line();
const CA2 = await p256Line();
const key = (l: string) => l.split(" ").slice(0, 2).join(" ");
const GRANT: AccessFiles = {
  caKeys: [key(CA1), key(CA2)],
  principals: [{ account: "ops", principals: ["ops@n1"] }, { account: "root", principals: ["root@n1"] }],
  revokedSerials: [3, 9],
};

for (const [name, make, ignore] of SUBJECTS) {
  Deno.test({
    name: `AccessHost contract: ${name}`,
    ignore,
    async fn(t) {
      const s = await make();
      try {
        await t.step("a grant writes every file, reloads once, and observes as applied", async () => {
          const r = await s.host.apply(GRANT);
          assert.equal(r.reloaded, true);
          assert.equal(await s.reloads(), 1);
          assert.ok(accessFilesMatch(GRANT, await s.host.observe()));
        });
        await t.step("the same files again write nothing and reload nothing", async () => {
          const r = await s.host.apply(GRANT);
          assert.deepEqual([r.written, r.removed, r.reloaded], [[], [], false]);
          assert.equal(await s.reloads(), 1);
        });
        await t.step("a new serial rewrites only the KRL; an account dropped loses its file; no reload", async () => {
          const next = { ...GRANT, principals: [GRANT.principals[1]!], revokedSerials: [3, 9, 12] };
          const r = await s.host.apply(next);
          assert.deepEqual([...r.written].sort(), ["bcd_revoked_keys", "bcd_revoked_keys.in"]);
          assert.deepEqual(r.removed, ["bcd_principals/ops"]);
          assert.equal(await s.reloads(), 1);
          assert.ok(accessFilesMatch(next, await s.host.observe()));
        });
        await t.step("no access removes every file and reloads once; again, nothing", async () => {
          assert.equal((await s.host.apply(NO_ACCESS_FILES)).reloaded, true);
          assert.equal((await s.files()).size, 0, [...(await s.files()).keys()].join(", "));
          assert.equal((await s.host.apply(NO_ACCESS_FILES)).reloaded, false);
          assert.equal(await s.reloads(), 2);
          assert.ok(accessFilesMatch(NO_ACCESS_FILES, await s.host.observe()));
        });
        await t.step("a drop-in sshd -t refuses leaves every old file and reloads nothing", async () => {
          await s.breakCheck();
          await assert.rejects(() => s.host.apply(GRANT), /sshd -t|Bad configuration option|NoSuchOption/);
          assert.equal((await s.files()).size, 0);
          assert.equal(await s.reloads(), 2);
        });
        await t.step("files that are not canonical are refused before anything is written", async () => {
          const bad = { ...GRANT, caKeys: [`${key(CA1)}\n${key(CA2)}`] };
          await assert.rejects(() => s.host.apply(bad), (e: unknown) => e instanceof Error);
          const unsorted = { ...GRANT, revokedSerials: [9, 3] };
          await assert.rejects(() => s.host.apply(unsorted), (e: unknown) => e instanceof Error);
          assert.equal((await s.files()).size, 0);
        });
      } finally {
        await s.cleanup();
      }
    },
  });
}

Deno.test("the helper refuses access.apply arguments by name before anything runs", async (t) => {
  const host = new FakeAccessHost();
  const h = await startTestHelper({ access: host });
  try {
    const rows: [string, unknown, string][] = [
      ["a path field", { ...GRANT, path: "/etc/passwd" }, "unknown-field"],
      ["a CA key with a second line", { ...GRANT, caKeys: [`${key(CA1)}\n${key(CA2)}`] }, "invalid-argument"],
      [
        "an account that is a path",
        { ...GRANT, principals: [{ account: "../../root/.ssh", principals: ["x@n1"] }] },
        "invalid-argument",
      ],
      [
        "a principal of another account",
        { ...GRANT, principals: [{ account: "root", principals: ["ops@n1"] }] },
        "invalid-argument",
      ],
      ["a serial 0", { ...GRANT, revokedSerials: [0] }, "invalid-argument"],
      ["serials as strings", { ...GRANT, revokedSerials: ["1"] }, "invalid-argument"],
    ];
    for (const [name, args, code] of rows) {
      await t.step(name, async () => {
        const e = await h.client.call("access.apply", args as AccessFiles).then(() => undefined, (e) => e);
        assert.ok(e instanceof HelperError, String(e));
        assert.equal(e.code, code, e.message);
      });
    }
    assert.equal(host.files.size, 0);
  } finally {
    await h.close();
  }
});
