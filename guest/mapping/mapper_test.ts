import assert from "node:assert/strict";
import { MemFs } from "./mem_fs.ts";
import { isCanonicalTarget, Mapper, MapRefused, RootMapper } from "./mapper.ts";
import { CONTAINER_ROOT_RESERVED, reservedConflict, RUNTIME_RESERVED } from "./reserved.ts";

const ROOT = "/rt/root";

function world(): MemFs {
  const fs = new MemFs({ pid: 7 });
  fs.seed(`${ROOT}/etc/hostname`, { kind: "file", data: "h", lower: true });
  fs.seed(`${ROOT}/srv`, { kind: "directory", entries: new Map(), lower: true });
  fs.seed("/src/dir/marker", { kind: "file", data: "m", lower: false });
  fs.seed("/src/file.txt", { kind: "file", data: "f", lower: false });
  fs.seed("/src/link", { kind: "link", target: "/src/dir", lower: false });
  fs.seed(`${ROOT}/srv/link`, { kind: "link", target: "/outside", lower: false });
  fs.seed(`${ROOT}/srv/file`, { kind: "file", data: "", lower: false });
  return fs;
}

Deno.test("reserved targets: the path itself, an ancestor, and below are refused; a sibling is not", () => {
  const rows: [string, string | null][] = [
    ["/run/nvx/time", "/run/nvx/time"],
    ["/run/nvx", "/run/nvx/time"],
    ["/run", "/run/nvx/time"],
    ["/run/nvx/time/a/b", "/run/nvx/time"],
    ["/run/nvx/timer", null],
    ["/run/other", null],
    ["/proc/self", "/proc"],
    ["/etc", "/etc/machine-id"],
    ["/etc/hostname", null],
    ["/.runtime-adapter-guest", "/.runtime-adapter-guest"],
    ["/srv/x", null],
  ];
  for (const [target, hit] of rows) assert.equal(reservedConflict(CONTAINER_ROOT_RESERVED, target), hit, target);
  assert.equal(reservedConflict(RUNTIME_RESERVED, "/proc"), null);
});

Deno.test("canonical targets", () => {
  for (const ok of ["/a", "/a/b", "/a/.b", "/a/b..c"]) assert.equal(isCanonicalTarget(ok), true, ok);
  for (const bad of ["", "/", "a", "/a/", "//a", "/a//b", "/a/./b", "/a/../b", "/a/.", "/a\0b"]) {
    assert.equal(isCanonicalTarget(bad), false, JSON.stringify(bad));
  }
});

/** One row per refusal kind of the mapper. */
const REFUSALS: ReadonlyArray<{ name: string; source: string; target: string; message: string }> = [
  { name: "a target that is not canonical", source: "/src/dir", target: "/srv/../x", message: "target /srv/../x" },
  { name: "a reserved target", source: "/src/dir", target: "/dev/shm", message: "reserved /dev/shm" },
  { name: "a link at a component", source: "/src/dir", target: "/srv/link/x", message: "link /srv/link" },
  { name: "a link as the target", source: "/src/dir", target: "/srv/link", message: "link /srv/link" },
  { name: "a file as a component", source: "/src/dir", target: "/srv/file/x", message: "target-kind /srv/file" },
  { name: "a directory onto a file", source: "/src/dir", target: "/srv/file", message: "target-kind /srv/file" },
  { name: "a file onto a directory", source: "/src/file.txt", target: "/srv", message: "target-kind /srv" },
  { name: "a source that is a link", source: "/src/link", target: "/srv/x", message: "source /src/link" },
  { name: "a source that is missing", source: "/src/none", target: "/srv/x", message: "source /src/none" },
];

Deno.test("the mapper's refusals, each of which creates nothing and mounts nothing", async (t) => {
  for (const r of REFUSALS) {
    await t.step(r.name, async () => {
      const fs = world();
      const m = new Mapper(fs, ROOT, CONTAINER_ROOT_RESERVED);
      await assert.rejects(
        m.map({ source: r.source, target: r.target, readOnly: false }),
        (e: unknown) => e instanceof MapRefused && e.message === r.message,
      );
      assert.deepEqual(await fs.mounts(), []);
      assert.deepEqual(await fs.readDir(`${ROOT}/srv`), ["file", "link"]);
      assert.equal(await fs.lstat(`${ROOT}/x`), null);
      assert.deepEqual(m.targets, []);
    });
  }
});

Deno.test("the mapper creates missing targets on the root, of the source's kind, and tears down in reverse", async () => {
  const fs = world();
  const m = new Mapper(fs, ROOT, []);
  await m.map({ source: "/src/dir", target: "/srv/a/b/dir", readOnly: true });
  await m.map({ source: "/src/file.txt", target: "/srv/a/f.txt", readOnly: false });
  assert.equal(fs.node(`${ROOT}/srv/a/b`)?.kind, "directory");
  assert.deepEqual(await fs.readDir(`${ROOT}/srv/a/b/dir`), ["marker"], "the mount shows the source");
  assert.equal(await fs.readFile(`${ROOT}/srv/a/f.txt`), "f");
  assert.deepEqual((await fs.mounts()).map((r) => [r.point, r.options]), [
    [`${ROOT}/srv/a/b/dir`, "ro,nosuid,nodev,relatime"],
    [`${ROOT}/srv/a/f.txt`, "rw,nosuid,nodev,relatime"],
  ]);
  await assert.rejects(fs.writeFile(`${ROOT}/srv/a/b/dir/new`, "x"), /EROFS/);
  await m.teardown();
  assert.deepEqual(await fs.mounts(), []);
  assert.deepEqual(await fs.readDir(`${ROOT}/srv/a/b/dir`), [], "the placeholder the mapper created stays");
});

Deno.test("a target inside an earlier mapping: onto what it shows is applied, creating inside it is refused", async () => {
  const fs = world();
  const m = new Mapper(fs, ROOT, []);
  await m.map({ source: "/src/dir", target: "/srv/n", readOnly: false });
  await m.map({ source: "/src/file.txt", target: "/srv/n/marker", readOnly: true });
  await assert.rejects(
    m.map({ source: "/src/dir", target: "/srv/n/new/deeper", readOnly: false }),
    /^MapRefused: nested/,
  );
  assert.deepEqual(await fs.readDir("/src/dir"), ["marker"], "nothing reached the source");
  const other = new Mapper(fs, ROOT, []);
  await other.map({ source: "/src/dir", target: "/srv/n/made-by-another", readOnly: false });
  assert.deepEqual(await fs.readDir("/src/dir"), ["made-by-another", "marker"], "only its own mappings count");
  await other.teardown();
  await m.teardown();
  assert.deepEqual(await fs.mounts(), []);
});

Deno.test("the root's mapper latches after a refusal; an empty table does no work", async () => {
  const fs = world();
  const r = new RootMapper(fs, ROOT);
  await r.map([]);
  assert.equal(r.latched, false);
  await r.map([{ source: "/src/dir", target: "/srv/ok", readOnly: false }]);
  await assert.rejects(r.map([{ source: "/src/dir", target: "/proc/x", readOnly: false }]), /reserved \/proc\/x/);
  assert.equal(r.latched, true);
  await assert.rejects(r.map([{ source: "/src/dir", target: "/srv/later", readOnly: false }]), /latched/);
  assert.equal(await fs.lstat(`${ROOT}/srv/later`), null);
  await r.map([]);
  assert.deepEqual(r.mapper.targets, ["/srv/ok"]);
});
