import assert from "node:assert/strict";
import { type Role, ROLES } from "../core/commands/kinds.ts";
import { roleFlags, roleTask } from "./permissions.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const DENO = Deno.execPath();

Deno.test("each role's deno.json task is exactly its permission table entry", () => {
  const cfg = JSON.parse(Deno.readTextFileSync(`${ROOT}deno.json`)) as { tasks: Record<string, string> };
  for (const role of ROLES) assert.equal(cfg.tasks[role], roleTask(role), `task ${role}`);
});

Deno.test("no role task grants everything", () => {
  for (const role of ROLES) {
    const flags = roleFlags(role);
    assert.ok(!flags.includes("-A") && !flags.includes("--allow-all"), role);
    assert.ok(!flags.includes("--allow-write"), `${role} has an unscoped --allow-write`);
    assert.ok(!flags.includes("--allow-ffi"), `${role} has an unscoped --allow-ffi`);
    assert.ok(!flags.includes("--allow-env"), `${role} has an unscoped --allow-env`);
  }
});

async function probe(role: Role, action: string, target: string): Promise<string> {
  const out = await new Deno.Command(DENO, {
    args: ["run", ...roleFlags(role), `${ROOT}fixtures/permissions/probe.ts`, action, target],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return text;
}

const tmp = Deno.makeTempDirSync({ prefix: "bcd-perm-" });

/** What each role must not be able to do, and a control each must be able to do (so a broken probe shows). */
const CASES: { role: Role; action: string; target: string; want: "denied" | "allowed" }[] = [
  { role: "guest", action: "run", target: "virsh", want: "denied" },
  { role: "guest", action: "run", target: "qemu-img", want: "denied" },
  { role: "guest", action: "run", target: "nft", want: "denied" },
  { role: "guest", action: "write", target: `${tmp}/guest`, want: "denied" },
  { role: "guest", action: "write", target: "/etc/bcd-probe", want: "denied" },
  { role: "guest", action: "run", target: "true", want: "allowed" },
  { role: "node", action: "write", target: `${tmp}/node`, want: "denied" },
  { role: "node", action: "write", target: "/etc/bcd-probe", want: "denied" },
  { role: "node", action: "write", target: "/root/bcd-probe", want: "denied" },
  { role: "node", action: "read", target: "/etc/shadow", want: "denied" },
  { role: "node", action: "run", target: "sh", want: "denied" },
  { role: "node", action: "env", target: "HOME", want: "denied" },
  { role: "node", action: "run", target: "qemu-img", want: "allowed" },
  { role: "site", action: "run", target: "virsh", want: "denied" },
  { role: "site", action: "write", target: "/var/lib/bcd/probe", want: "denied" },
  { role: "ramdisk", action: "run", target: "virsh", want: "denied" },
  { role: "ramdisk", action: "write", target: "/var/lib/bcd/probe", want: "denied" },
  { role: "sim", action: "run", target: "qemu-img", want: "denied" },
  { role: "sim", action: "write", target: "/var/lib/bcd/probe", want: "denied" },
  { role: "sim", action: "write", target: "/etc/cdi/probe", want: "denied" },
  { role: "sim", action: "write", target: "/tmp/bcd-sim-probe-sibling", want: "denied" },
];

Deno.test("each role's task lacks what it must not have", async (t) => {
  for (const c of CASES) {
    await t.step(`${c.role} ${c.action} ${c.target} is ${c.want}`, async () => {
      const got = await probe(c.role, c.action, c.target);
      assert.ok(got.startsWith(c.want), `${c.role} ${c.action} ${c.target}: got "${got}"`);
    });
  }
});

Deno.test("node may write its own data, CDI and run directories", async (t) => {
  for (const dir of ["/var/lib/bcd", "/etc/cdi", "/run/bcd"]) {
    await t.step(dir, async () => {
      let made = false;
      try {
        Deno.statSync(dir);
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
        Deno.mkdirSync(dir, { recursive: true });
        made = true;
      }
      try {
        assert.equal(await probe("node", "write", `${dir}/.bcd-permission-probe`), "allowed");
      } finally {
        if (made) Deno.removeSync(dir);
      }
    });
  }
});

Deno.test("extraWrite grants exactly the directories it lists", async () => {
  // The real directories may not exist here; extraWrite proves the scoping mechanism grants exactly what it lists.
  const out = await new Deno.Command(DENO, {
    args: [
      "run",
      ...roleFlags("node", { extraWrite: [tmp] }),
      `${ROOT}fixtures/permissions/probe.ts`,
      "write",
      `${tmp}/node-ok`,
    ],
    stdout: "piped",
  }).output();
  assert.equal(new TextDecoder().decode(out.stdout).trim(), "allowed");
});
