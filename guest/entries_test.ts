/**
 * The entry (`entry.ts`, `entry_scripts.ts`) and the entries probe (`entries.ts`): the refusals and the launch's
 * reading as pure functions, then the whole probe on a real root directory of this host — new mount, PID and UTS
 * namespaces, `pivot_root`, the bounding set — where the test runs as root with static BusyBox and util-linux
 * `setpriv` (skipped with the reason printed otherwise). The guest's own run is `test:vm-layered`'s
 * `root_profiles_enter_the_root`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  ALLOWED_CAPABILITIES,
  CAPABILITY_NAMES,
  checkEntry,
  type EntryIdentity,
  EntryRefused,
  passwdUids,
  setprivArgs,
} from "./entry.ts";
import {
  entryCases,
  escapeValue,
  guestEntryTools,
  parseLaunch,
  probeEntries,
  refusalFacts,
  unescapeValue,
} from "./entries.ts";
import { ENTRY_FAILED, ENTRY_REFUSED } from "./entry_scripts.ts";

const root0 = (capabilities: string[], published = false): EntryIdentity => ({
  uid: 0,
  gid: 0,
  capabilities,
  published,
  accounts: "numeric",
});

Deno.test("the entry refuses each identity outside its rules, with the reason", () => {
  const refusals: [EntryIdentity, RegExp][] = [
    [root0(["sys_admin"]), /^capability sys_admin is outside the allowlist$/],
    [root0(["cap_63"]), /^capability cap_63 is outside the allowlist$/],
    [root0(["net_bind_service"], true), /^capability net_bind_service is refused while listeners are published$/],
    [root0(["net_raw"], true), /^capability net_raw is refused while listeners are published$/],
    [{ ...root0(["chown"]), uid: 1000 }, /^capabilities for user ID 1000: only user ID 0 holds capabilities$/],
    [{ ...root0([]), uid: 4242, accounts: "existing" }, /^user ID 4242 has no account in the root/],
    [{ ...root0([]), uid: -1 }, /^user ID -1 is not a user ID$/],
    [{ ...root0([]), gid: 2 ** 32 }, /^group ID 4294967296 is not a group ID$/],
  ];
  for (const [id, why] of refusals) {
    assert.throws(() => checkEntry(id, () => false), (e: unknown) => e instanceof EntryRefused && why.test(e.message));
  }
  // Accepted: every allowed capability alone, none, published without the two, an account that exists.
  for (const c of ALLOWED_CAPABILITIES) checkEntry(root0([c]), () => false);
  checkEntry(root0(ALLOWED_CAPABILITIES.filter((c) => c !== "net_raw" && c !== "net_bind_service"), true), () => false);
  checkEntry({ ...root0([]), uid: 4242, accounts: "existing" }, (uid) => uid === 4242);
  assert.equal(CAPABILITY_NAMES.length, 41);
});

Deno.test("refusal facts: the 51 capabilities outside the allowlist, none accepted", () => {
  assert.deepEqual(refusalFacts(() => false), [
    ["refused.outside", "51"],
    ["refused.accepted", "none"],
    ["refused.published.net-bind-service", "refused"],
    ["refused.published.net-raw", "refused"],
    ["refused.non-root", "refused"],
    ["refused.existing", "refused"],
  ]);
  assert.equal(refusalFacts((uid) => uid === 4242).at(-1)![1], "accepted");
});

Deno.test("setpriv's arguments: the bounding set cut to the capabilities, nothing inheritable or ambient", () => {
  assert.deepEqual(setprivArgs({ ...root0(["chown", "kill"]) }), [
    "--bounding-set=-all,+chown,+kill",
    "--inh-caps=-all",
    "--ambient-caps=-all",
    "--no-new-privs",
    "--reuid=0",
    "--regid=0",
    "--clear-groups",
  ]);
  assert.deepEqual(passwdUids("root:x:0:0::/:/bin/sh\nbad line\nu:x:1000:1000::/:/bin/sh\n"), new Set([0, 1000]));
  assert.deepEqual(
    entryCases().map((c) => c.name).slice(0, 3),
    ["only-chown", "only-dac-override", "only-fowner"],
  );
});

Deno.test("a launch is read as the entry's refusal or failure, or the program's facts", () => {
  assert.deepEqual(
    parseLaunch(ENTRY_REFUSED, "", "bcd-entry: refused ELOOP: /proc/self/cwd passes through the magic link\n"),
    { launch: "refused ELOOP", status: ENTRY_REFUSED, facts: [] },
  );
  assert.deepEqual(parseLaunch(ENTRY_FAILED, "", "bcd-entry: failed to mount /proc\n").launch, "failed to mount /proc");
  assert.deepEqual(parseLaunch(0, "uid=0\npid=1\n", ""), {
    launch: "started",
    status: 0,
    facts: [["uid", "0"], ["pid", "1"]],
  });
  // A program that printed nothing: the first line of its standard error.
  assert.equal(parseLaunch(1, "", "\nsetpriv: unknown capability\n").launch, "failed setpriv: unknown capability");
  // "bcd-entry:" from a program that ran is the program's, not the entry's.
  assert.equal(parseLaunch(3, "a=b\n", "bcd-entry: refused EPERM: x\n").launch, "started");
  for (const v of ["plain", "a\\b", "two\nlines\r", "\\n"]) assert.equal(unescapeValue(escapeValue(v)), v);
});

async function hostWhyNot(): Promise<string | null> {
  if (Deno.uid() !== 0) return "not root: the entry mounts and pivots";
  try {
    const tools = await guestEntryTools();
    const file = await new Deno.Command("sh", { args: ["-c", `od -An -c -N 4 ${tools.busybox}`], stdout: "piped" })
      .output();
    if (!new TextDecoder().decode(file.stdout).includes("E   L   F")) return "busybox is no ELF binary";
    const dyn = await new Deno.Command(`/lib64/ld-linux-x86-64.so.2`, {
      args: ["--list", tools.busybox],
      stdout: "null",
      stderr: "null",
    }).output();
    if (dyn.success) return "busybox is not static (install busybox-static)";
  } catch (e) {
    return `no entry tools: ${e instanceof Error ? e.message : String(e)}`;
  }
  const ns = await new Deno.Command("busybox", {
    args: ["unshare", "--mount", "--pid", "--uts", "--fork", "--", "busybox", "true"],
    stdout: "null",
    stderr: "null",
  }).output();
  return ns.success ? null : "cannot unshare mount, PID and UTS namespaces here";
}

const WHY_NOT = await hostWhyNot();
if (WHY_NOT !== null) console.log(`entries_test: the probe on a real root is skipped: ${WHY_NOT}`);

Deno.test({
  name: "the entries probe on a real root: namespaces, the root over /, the allowlist, the runtime's binds",
  ignore: WHY_NOT !== null,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "bcd-entries-" });
    try {
      const root = join(dir, "root");
      await Deno.mkdir(join(root, "usr"), { recursive: true });
      const facts = new Map(
        await probeEntries({
          root,
          cgroup: "",
          helper: [
            Deno.execPath(),
            "run",
            "--quiet",
            "--allow-all",
            new URL("../roles/guest.ts", import.meta.url).pathname,
            "entries",
          ],
          tools: await guestEntryTools(),
        }),
      );
      const f = (k: string) => facts.get(k);
      assert.equal(f("refused.outside"), "51");
      for (const [name, mask] of [["only-chown", "1"], ["only-net-raw", "2000"], ["none", "0"]] as const) {
        const m = mask.padStart(16, "0");
        assert.deepEqual(
          [f(`${name}.launch`), f(`${name}.pid`), f(`${name}.fds`), f(`${name}.leaked`)],
          ["started", "1", "0 1 2", "closed"],
          name,
        );
        assert.deepEqual([f(`${name}.cap.prm`), f(`${name}.cap.bnd`), f(`${name}.cap.inh`)], [m, m, "0".repeat(16)]);
        assert.equal(f(`${name}.no-new-privs`), "1");
        assert.equal(f(`${name}.threshold.write`), "refused EROFS", "/proc/sys is read-only");
      }
      assert.equal(f("only-chown.chown"), "allowed");
      assert.equal(f("none.chown"), "refused EPERM");
      assert.equal(f("none.dac-override"), "refused EACCES");
      assert.equal(f("unpublished.setuid"), "allowed");
      assert.deepEqual([f("numeric.uid"), f("numeric.gid"), f("numeric.cap.prm")], ["4242", "4242", "0".repeat(16)]);
      // The root moved over /: the host's own tree is gone from its view.
      assert.deepEqual(f("none.root")?.split(" "), [".runtime-adapter-guest", "etc", "proc", "tmp", "usr"]);
      assert.equal(f("cwd-directory.cwd"), "/tmp/runtime-adapter-entries/cwd-directory");
      for (const c of ["cwd-leaked", "cwd-self", "cwd-root", "cwd-init", "cwd-link"]) {
        assert.deepEqual([f(`${c}.launch`), f(`${c}.status`), f(`${c}.pid`)], ["refused ELOOP", "125", undefined], c);
      }
      assert.equal(f("cwd-descriptors.launch"), "refused ELOOP,refused ENOENT");
      assert.equal(f("generated.machine-id"), f("generated.source"));
      assert.match(f("generated.mount.machine-id") ?? "", /^ro,/);
      assert.equal(f("generated.hostname"), "runtime-adapter");
      assert.equal(f("only-chown.machine-id"), f("after.machine-id"), "the root's own, before the bind");
      assert.notEqual(f("after.machine-id"), f("generated.source"));
      assert.equal(f("after.mounts"), "none", "the binds ended with the helper's namespace");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
