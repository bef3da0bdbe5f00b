/**
 * The probes of `worker::mapping` (seed 002 §Probes): `map` and `map-refused` map through the root's own mapper
 * ({@link RootMapper}), `map-checks` through new mappers ({@link Mapper}) with reserved sets of their own. Each
 * writes its sources below /tmp/runtime-adapter-sources (a directory `dir` with a file `marker` and an empty
 * directory `inner`, a file `file.txt`, and an empty directory `out`), in place of the guest's mount of a host's
 * export; the links that they plant in the root lead to /tmp/runtime-adapter-outside, an empty directory outside
 * it. They run over {@link FsOps}, so the fake root runs them too.
 *
 * Values: a mapping's outcome is `applied`, `link` for a link at the component that the check expects, or the
 * refusal's kind with the path that it names (`reserved /proc`, `target-kind /srv/checks/kind-file`, `latched`).
 * A write is `allowed` or `refused ERRNO` (`failed PROBLEM` otherwise); a list is its items separated by spaces,
 * or `none`; a "whether" is `true` or `false`.
 *
 * @module
 */
import type { Facts } from "../../core/framing/mod.ts";
import { errnoOf, type FsOps, mountsBelow, type NodeKind } from "./fs_ops.ts";
import { Mapper, MapRefused, type MapRequest, type RootMapper } from "./mapper.ts";
import { AGENT_PATH, CONTAINER_ROOT_RESERVED, type ReservedSet, RUNTIME_RESERVED } from "./reserved.ts";

/** What the mapping probes work on. */
export interface MappingContext {
  readonly fs: FsOps;
  /** The root's path in the guest. */
  readonly root: string;
  readonly rootMapper: RootMapper;
  /** Default /tmp/runtime-adapter-sources. */
  readonly sources?: string;
  /** Default /tmp/runtime-adapter-outside. */
  readonly outside?: string;
  /** The process whose magic links map-checks tries (the worker's own). */
  readonly pid: number;
  /** What the overlay's upper holds at a path of the root. */
  upperKind(path: string): Promise<NodeKind | null>;
  /** How often map-checks attaches its read-only mapping (default 200). */
  readonly attaches?: number;
}

export const SOURCES = "/tmp/runtime-adapter-sources";
export const OUTSIDE = "/tmp/runtime-adapter-outside";
/** The text of the sources' files, and of the probes' writes. */
export const MARKER_TEXT = "runtime-adapter-marker";
export const FILE_TEXT = "runtime-adapter-file";
export const WRITE_TEXT = "runtime-adapter-write";
const WRITE_NAME = ".runtime-adapter-write";
/** The adapter's own reserved set of map-checks: the tree /srv/adapter and the path /srv/checks/exact. */
export const ADAPTER_RESERVED: ReservedSet = ["/srv/adapter", "/srv/checks/exact"];

const list = (items: readonly string[]) => items.length === 0 ? "none" : items.join(" ");
const message = (e: unknown) => e instanceof Error ? e.message : String(e);

async function mkdirp(fs: FsOps, path: string): Promise<void> {
  let cur = "";
  for (const c of path.split("/").filter((c) => c !== "")) {
    cur += `/${c}`;
    if ((await fs.lstat(cur)) === null) await fs.mkdir(cur);
  }
}

async function outcome(p: Promise<unknown>, link?: string): Promise<string> {
  try {
    await p;
    return "applied";
  } catch (e) {
    if (!(e instanceof MapRefused)) return `failed ${message(e)}`;
    return e.kind === "link" && e.path === link ? "link" : e.message;
  }
}

/** The file's text, or null when nothing is there (ENOENT); any other failure surfaces. */
async function readIfThere(fs: FsOps, path: string): Promise<string | null> {
  try {
    return await fs.readFile(path);
  } catch (e) {
    if (errnoOf(e) === "ENOENT") return null;
    throw e;
  }
}

async function attempt(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "allowed";
  } catch (e) {
    const code = errnoOf(e);
    return code !== null && code !== "EMOUNT" ? `refused ${code}` : `failed ${message(e)}`;
  }
}

async function writeSources(ctx: MappingContext): Promise<{ src: string; out: string }> {
  const fs = ctx.fs;
  const src = ctx.sources ?? SOURCES;
  const out = ctx.outside ?? OUTSIDE;
  await mkdirp(fs, `${src}/dir/inner`);
  await fs.writeFile(`${src}/dir/marker`, MARKER_TEXT);
  await fs.writeFile(`${src}/file.txt`, FILE_TEXT);
  await mkdirp(fs, `${src}/out`);
  await mkdirp(fs, out);
  return { src, out };
}

async function plantLink(fs: FsOps, path: string, to: string): Promise<void> {
  await mkdirp(fs, path.slice(0, path.lastIndexOf("/")));
  if ((await fs.lstat(path)) === null) await fs.symlink(to, path);
}

/** `map`: zero mappings, then the table, through the root; what each mapping allows and shows. */
export async function probeMap(ctx: MappingContext): Promise<Facts> {
  const { fs, root, rootMapper } = ctx;
  const { src } = await writeSources(ctx);
  const facts: [string, string][] = [];
  facts.push(["zero", await outcome(rootMapper.map([]))]);
  facts.push(["zero.mounts", list(mountsBelow(await fs.mounts(), root))]);
  const table = [
    { name: "dir", source: "dir", target: "/srv/maps/dir", readOnly: true, directory: true },
    { name: "inner", source: "dir/inner", target: "/srv/maps/dir/inner", readOnly: false, directory: true },
    { name: "file", source: "file.txt", target: "/srv/maps/file.txt", readOnly: true, directory: false },
    { name: "out", source: "out", target: "/srv/maps/out", readOnly: false, directory: true },
  ];
  const requests: MapRequest[] = table.map((t) => ({
    source: `${src}/${t.source}`,
    target: t.target,
    readOnly: t.readOnly,
  }));
  facts.push(["table", await outcome(rootMapper.map(requests))]);
  const rows = await fs.mounts();
  facts.push(["mounts", list(mountsBelow(rows, root))]);
  for (const t of table) {
    const at = `${root}${t.target}`;
    facts.push([`${t.name}.options`, rows.findLast((r) => r.point === at)?.options ?? "none"]);
    const written = t.directory ? `${at}/${WRITE_NAME}` : at;
    const reached = t.directory ? `${src}/${t.source}/${WRITE_NAME}` : `${src}/${t.source}`;
    const write = await attempt(fs.writeFile(written, WRITE_TEXT));
    facts.push([`${t.name}.write`, write]);
    if (write === "allowed") {
      const found = await readIfThere(fs, reached);
      facts.push([`${t.name}.source`, found === WRITE_TEXT ? "reached" : "nothing"]);
      if (t.directory && found !== null) await fs.remove(reached);
    } else {
      const read = t.directory ? fs.readDir(at).then(list) : fs.readFile(at);
      facts.push([`${t.name}.read`, await read.catch((e) => `unreadable: ${message(e)}`)]);
    }
  }
  facts.push(["upper.directory", String((await ctx.upperKind("/srv/maps")) === "directory")]);
  facts.push(["upper.file", String((await ctx.upperKind("/srv/maps/file.txt")) === "file")]);
  facts.push(["latched", String(rootMapper.latched)]);
  return facts;
}

/** `map-refused`: a mapping through the link /srv/link, which latches the root, and a later one. */
export async function probeMapRefused(ctx: MappingContext): Promise<Facts> {
  const { fs, root, rootMapper } = ctx;
  const { src, out } = await writeSources(ctx);
  await plantLink(fs, `${root}/srv/link`, out);
  const facts: [string, string][] = [];
  const through = rootMapper.map([{ source: `${src}/dir`, target: "/srv/link/dir", readOnly: false }]);
  facts.push(["through-link", await outcome(through, "/srv/link")]);
  facts.push(["latched", String(rootMapper.latched)]);
  facts.push([
    "later",
    await outcome(rootMapper.map([{ source: `${src}/out`, target: "/srv/later", readOnly: false }])),
  ]);
  facts.push(["later.target", String((await fs.lstat(`${root}/srv/later`)) !== null)]);
  facts.push(["mounts", list(mountsBelow(await fs.mounts(), root))]);
  facts.push(["outside", list(await fs.readDir(out))]);
  return facts;
}

/** The reserved checks of map-checks: the fact's suffix, the target, and the set that refuses it. */
export const RESERVED_CHECKS: ReadonlyArray<readonly [string, string, ReservedSet]> = [
  ["run", "/run", RUNTIME_RESERVED],
  ["run-nvx", "/run/nvx", RUNTIME_RESERVED],
  ["time", "/run/nvx/time", RUNTIME_RESERVED],
  ["time-below", "/run/nvx/time/below", RUNTIME_RESERVED],
  ["proc", "/proc", CONTAINER_ROOT_RESERVED],
  ["sys", "/sys", CONTAINER_ROOT_RESERVED],
  ["dev", "/dev", CONTAINER_ROOT_RESERVED],
  ["agent", AGENT_PATH, CONTAINER_ROOT_RESERVED],
  ["machine-id", "/etc/machine-id", CONTAINER_ROOT_RESERVED],
  ["etc", "/etc", CONTAINER_ROOT_RESERVED],
  ["adapter-tree", "/srv/adapter/inside", ADAPTER_RESERVED],
  ["adapter-ancestor", "/srv", ADAPTER_RESERVED],
  ["adapter-path", "/srv/checks/exact", ADAPTER_RESERVED],
  ["adapter-below", "/srv/checks/exact/below", ADAPTER_RESERVED],
];

/** `map-checks`: each check through a new mapper, which it tears down. */
export async function probeMapChecks(ctx: MappingContext): Promise<Facts> {
  const { fs, root } = ctx;
  const { src, out } = await writeSources(ctx);
  const base = "/srv/checks";
  const at = (p: string) => `${root}${p}`;
  await mkdirp(fs, at(base));
  const before = mountsBelow(await fs.mounts(), root);
  const facts: [string, string][] = [];
  const check = async (key: string, m: MapRequest, reserved: ReservedSet = [], link?: string) => {
    const mapper = new Mapper(fs, root, reserved);
    facts.push([key, await outcome(mapper.map(m), link)]);
    await mapper.teardown();
  };
  const dirOf = (target: string) => ({ source: `${src}/out`, target, readOnly: false });
  const fileOf = (target: string) => ({ source: `${src}/file.txt`, target, readOnly: false });

  // A link at each component of base/link-X/a/b/new, and a link to .. .
  await plantLink(fs, at(`${base}/link-a/a`), out);
  await mkdirp(fs, at(`${base}/link-b/a`));
  await plantLink(fs, at(`${base}/link-b/a/b`), out);
  await mkdirp(fs, at(`${base}/link-new/a/b`));
  await plantLink(fs, at(`${base}/link-new/a/b/new`), out);
  await plantLink(fs, at(`${base}/link-up/up`), "..");
  await check("link.a", dirOf(`${base}/link-a/a/b/new`), [], `${base}/link-a/a`);
  await check("link.b", dirOf(`${base}/link-b/a/b/new`), [], `${base}/link-b/a/b`);
  await check("link.new", dirOf(`${base}/link-new/a/b/new`), [], `${base}/link-new/a/b/new`);
  await check("link.up", dirOf(`${base}/link-up/up/x`), [], `${base}/link-up/up`);

  // The magic links of a procfs mounted in the root for the checks.
  const proc = `${base}/proc`;
  await mkdirp(fs, at(proc));
  await fs.mountProc(at(proc));
  try {
    const pid = String(ctx.pid);
    for (
      const [key, link] of [
        ["self", `${proc}/self`],
        ["thread-self", `${proc}/thread-self`],
        ["root", `${proc}/${pid}/root`],
        ["cwd", `${proc}/${pid}/cwd`],
        ["fd", `${proc}/${pid}/fd/0`],
      ] as const
    ) {
      await check(`magic.${key}`, dirOf(`${link}/x`), [], link);
    }
  } finally {
    await fs.detach(at(proc));
  }

  // The wrong kinds.
  if ((await fs.lstat(at(`${base}/kind-file`))) === null) await fs.createFile(at(`${base}/kind-file`));
  await mkdirp(fs, at(`${base}/kind-dir`));
  await check("kind.directory", { source: `${src}/dir`, target: `${base}/kind-file`, readOnly: false });
  await check("kind.file", fileOf(`${base}/kind-dir`));

  // A mapping onto a file that an earlier one shows, and one that would create its target inside it.
  const nested = new Mapper(fs, root, []);
  const first = await outcome(nested.map({ source: `${src}/dir`, target: `${base}/nested`, readOnly: false }));
  if (first !== "applied") facts.push(["nested.first", first]);
  facts.push(["nested.onto", await outcome(nested.map({ ...fileOf(`${base}/nested/marker`), readOnly: true }))]);
  facts.push(["nested.create", await outcome(nested.map(dirOf(`${base}/nested/new`)))]);
  facts.push(["nested.source", String((await fs.lstat(`${src}/dir/new`)) !== null)]);
  facts.push(["nested.teardown", await nested.teardown().then(() => "complete", (e) => `incomplete ${message(e)}`)]);

  // The reserved targets: the runtime's, the container root's, the adapter's own.
  const existed = new Map<string, boolean>();
  for (const [, target] of RESERVED_CHECKS) existed.set(target, (await fs.lstat(at(target))) !== null);
  for (const [key, target, set] of RESERVED_CHECKS) {
    const file = key === "agent" || key === "machine-id";
    await check(`reserved.${key}`, file ? fileOf(target) : dirOf(target), set);
  }
  const created: string[] = [];
  for (const [target, was] of existed) if (!was && (await fs.lstat(at(target))) !== null) created.push(target);
  facts.push(["reserved.created", list(created)]);

  facts.push(...await readOnlyRace(ctx, src, `${base}/read-only.txt`));

  const rows = await fs.mounts();
  facts.push(["outside.entries", list(await fs.readDir(out))]);
  facts.push([
    "outside.mounts",
    list(rows.filter((r) => r.point === out || r.point.startsWith(`${out}/`)).map((r) => r.point)),
  ]);
  const left = mountsBelow(rows, root);
  for (const b of before) {
    const i = left.indexOf(b);
    if (i >= 0) left.splice(i, 1);
  }
  facts.push(["left", list(left)]);
  return facts;
}

/**
 * Tears a mapper down while the race's other thread keeps opening the target: an unmount that lands in the instant
 * the thread holds the path is `EBUSY`, so it is tried again (a bounded number of times). The mapper pops a target
 * only once it is detached, so a retry never detaches twice.
 */
async function _teardownRacing(mapper: Mapper): Promise<void> {
  for (let attempt = 1;; attempt++) {
    try {
      return await mapper.teardown();
    } catch (e) {
      if (errnoOf(e) !== "EBUSY" || attempt >= 50) throw e;
      await new Promise((r) => setTimeout(r, 2));
    }
  }
}

/** A read-only mapping attached and unmounted again and again while another thread opens its file for writing. */
async function readOnlyRace(ctx: MappingContext, src: string, target: string): Promise<[string, string][]> {
  const { fs, root } = ctx;
  const watched = `${src}/file.txt`;
  const total = ctx.attaches ?? 200;
  const writer = await fs.startWriter(`${root}${target}`, watched);
  let attaches = 0;
  let flags = "none";
  let failed: string | null = null;
  let race;
  try {
    for (; attaches < total; attaches++) {
      const mapper = new Mapper(fs, root, []);
      const o = await outcome(mapper.map({ source: watched, target, readOnly: true }));
      if (o !== "applied") {
        failed = o;
        break;
      }
      if (attaches === 0) {
        flags = (await fs.mounts()).findLast((r) => r.point === `${root}${target}`)?.options ?? "none";
      }
      await _teardownRacing(mapper);
    }
  } finally {
    race = await writer.stop();
  }
  const source = (await readIfThere(fs, watched)) === FILE_TEXT ? "intact" : "different";
  return [
    ["read-only.attaches", failed === null ? String(attaches) : `${attaches} ${failed}`],
    ["read-only.flags", flags],
    ["read-only.writable", String(race.writable > 0)],
    ["read-only.source", source],
  ];
}
