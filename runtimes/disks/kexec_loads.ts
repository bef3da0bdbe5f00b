/**
 * Root's `kexec.load` and `kexec.exec` (`boot.kexec` on the ramdisk, issue 19; the op table is in
 * `core/helper/args_kexec.ts`).
 *
 * From the deployed disk: the disk is asked again of {@link DiskGuard} by its stable id (never the ramdisk's own, never
 * a mounted one) and claimed like a deploy; its partitions are read from `/sys/block/<disk>/`, each probed by
 * `blkid -p` (the superblock, not a cache), and tried in order — first the one the command line's `root=UUID=`,
 * `PARTUUID=`, `LABEL=` or `PARTLABEL=` names, then the rest by number. A partition of a filesystem root reads
 * (ext2/3/4, vfat, xfs, btrfs) is mounted read-only with `nosuid,nodev,noexec` (and without journal replay for ext3/4
 * and xfs: nothing is written to the deployed disk) in a private directory; the kernel (and initrd) paths are resolved
 * inside that filesystem (`inside_path.ts`) and copied out, hashed, bounded (kernel 256 MiB, initrd 1 GiB); then it
 * is unmounted. From URLs: downloaded over https by the image store's rules, each checked against its digest.
 * Either way `kexec -l` loads the copies, which are removed after.
 *
 * `kexec.exec` answers once `/sys/kernel/kexec_loaded` says a kernel is loaded and then runs `kexec -e`, which does
 * not return: the machine is the loaded kernel's. Models: Ironic Python Agent's `kexec` deploy step (reads
 * kernel/initrd from the written root partition and runs `kexec -l`/`kexec -e`), tink-worker's `kexec` action (mounts
 * the block device by path, `kexec_file_load`).
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { Logger } from "../../core/log/mod.ts";
import { HelperError } from "../../core/helper/errors.ts";
import type { KexecLoadAnswer, KexecLoadArgs } from "../../core/helper/protocol.ts";
import { DownloadRefused, httpsDownload } from "../host/https_download.ts";
import { listDir, readAttr, readInt } from "../host/sysfs.ts";
import { DiskGuard, DiskRefused } from "./disk_guard.ts";
import { DiskClaims } from "./disk_claims.ts";
import { resolveInside } from "./inside_path.ts";

/** The tools root runs, absolute. */
export interface KexecTools {
  readonly kexec?: string;
  readonly mount?: string;
  readonly umount?: string;
  readonly blkid?: string;
}

/** Options (tests: a guard over their loop disks, a fake kexec, a CA-trusting fetch, their own kexec_loaded). */
export interface KexecLoadsOptions {
  readonly guard?: DiskGuard;
  readonly claims?: DiskClaims;
  readonly fetch?: typeof fetch;
  readonly tools?: KexecTools;
  readonly sys?: string;
  readonly dev?: string;
  /** The file saying whether a kernel is loaded (default `/sys/kernel/kexec_loaded`). */
  readonly loadedFlag?: string;
  /** Called with `kexec -e`'s failure when it returns (on success it never does). */
  readonly onExecReturned?: (words: string) => void;
  readonly log?: Logger;
}

const _KERNEL_MAX = 256 * 1024 * 1024;
const _INITRD_MAX = 1024 * 1024 * 1024;
const _MOUNT_OPTS: Record<string, string> = {
  ext2: "ro,nosuid,nodev,noexec",
  ext3: "ro,nosuid,nodev,noexec,noload",
  ext4: "ro,nosuid,nodev,noexec,noload",
  vfat: "ro,nosuid,nodev,noexec",
  xfs: "ro,nosuid,nodev,noexec,norecovery",
  btrfs: "ro,nosuid,nodev,noexec",
};

class _Refused extends Error {
  constructor(readonly reason: string, message: string) {
    super(message);
  }
}

interface _Part {
  readonly name: string;
  readonly number: number;
  readonly probe: Readonly<Record<string, string>>;
}

/** The kexec loads root runs. */
export class KexecLoads {
  readonly #o: KexecLoadsOptions;
  readonly #guard: DiskGuard;
  readonly #claims: DiskClaims;
  readonly #tools: Required<KexecTools>;

  constructor(o: KexecLoadsOptions = {}) {
    this.#o = o;
    this.#guard = o.guard ?? new DiskGuard();
    this.#claims = o.claims ?? new DiskClaims();
    this.#tools = {
      kexec: o.tools?.kexec ?? "/usr/sbin/kexec",
      mount: o.tools?.mount ?? "/usr/bin/mount",
      umount: o.tools?.umount ?? "/usr/bin/umount",
      blkid: o.tools?.blkid ?? "/usr/sbin/blkid",
    };
  }

  /** Loads the kernel `a` names; answers what was loaded or why not. */
  async load(a: KexecLoadArgs): Promise<KexecLoadAnswer> {
    const work = await Deno.makeTempDir({ prefix: "bcd-kexec-" });
    try {
      await Deno.chmod(work, 0o700);
      const got = a.source === "disk" ? await this.#fromDisk(a, work) : await this.#fromUrls(a, work);
      if (a.kernelSha256 !== undefined && got.kernelSha256 !== a.kernelSha256) {
        throw new _Refused("digest-mismatch", `the kernel's SHA-256 is ${got.kernelSha256}, not ${a.kernelSha256}`);
      }
      if (a.initrdSha256 !== undefined && got.initrdSha256 !== a.initrdSha256) {
        throw new _Refused("digest-mismatch", `the initrd's SHA-256 is ${got.initrdSha256}, not ${a.initrdSha256}`);
      }
      const args = ["-l", `${work}/kernel`, ...(got.initrdSha256 ? [`--initrd=${work}/initrd`] : [])];
      const out = await _run(this.#tools.kexec, [...args, `--command-line=${a.cmdline}`]);
      if (out.code !== 0) throw new _Refused("kexec-failed", `kexec -l exited ${out.code}: ${out.words}`);
      this.#o.log?.info({ ...got }, "kexec.load: kernel loaded");
      const { partition, kernelSha256, initrdSha256 } = got;
      return {
        ok: true,
        kernelSha256,
        ...(initrdSha256 ? { initrdSha256 } : {}),
        ...(partition !== undefined ? { partition } : {}),
      };
    } catch (e) {
      if (e instanceof _Refused) return { ok: false, reason: e.reason, message: `kexec.load: ${e.message}` };
      if (e instanceof DiskRefused) return { ok: false, reason: e.reason, message: e.message };
      if (e instanceof DownloadRefused) return { ok: false, reason: e.reason, message: e.message };
      throw e;
    } finally {
      await Deno.remove(work, { recursive: true });
    }
  }

  /** Answers once a kernel is loaded, then jumps into it with `kexec -e`. */
  async exec(): Promise<{ readonly executing: true }> {
    const flag = this.#o.loadedFlag ?? "/sys/kernel/kexec_loaded";
    if ((await readAttr(flag)) !== "1") throw new HelperError("failed", `kexec.exec: no kernel is loaded (${flag})`);
    this.#o.log?.warn({}, "kexec.exec: jumping into the loaded kernel");
    // After this answer is written: kexec -e does not return when it works.
    setTimeout(() => {
      _run(this.#tools.kexec, ["-e"]).then((out) => {
        const words = `kexec -e exited ${out.code}: ${out.words}`;
        this.#o.log?.error({}, words);
        this.#o.onExecReturned?.(words);
      }, (e: unknown) => {
        const words = `kexec -e did not run: ${e instanceof Error ? e.message : e}`;
        this.#o.log?.error({}, words);
        this.#o.onExecReturned?.(words);
      });
    }, 200);
    return { executing: true };
  }

  async #fromUrls(a: Extract<KexecLoadArgs, { source: "url" }>, work: string) {
    const fetcher = this.#o.fetch ?? fetch;
    const kernelSha256 = await httpsDownload(a.kernel, `${work}/kernel`, {
      fetch: fetcher,
      maxBytes: _KERNEL_MAX,
      what: "kernel",
    });
    const initrdSha256 = a.initrd === undefined ? undefined : await httpsDownload(a.initrd, `${work}/initrd`, {
      fetch: fetcher,
      maxBytes: _INITRD_MAX,
      what: "initrd",
    });
    return { kernelSha256, initrdSha256, partition: undefined };
  }

  async #fromDisk(a: Extract<KexecLoadArgs, { source: "disk" }>, work: string) {
    const disk = await this.#guard.check(a.diskId);
    const release = this.#claims.claim(disk.kernelName, `kexec.load from ${a.diskId}`);
    try {
      const parts = await this.#partitions(disk.kernelName);
      const root = /(?:^| )root=(UUID|PARTUUID|LABEL|PARTLABEL)=(\S+)/.exec(a.cmdline);
      const key = root && { UUID: "UUID", PARTUUID: "PART_ENTRY_UUID", LABEL: "LABEL", PARTLABEL: "PART_ENTRY_NAME" }[
        root[1] as "UUID"
      ];
      const named = root && key ? parts.filter((p) => p.probe[key]?.toLowerCase() === root[2]!.toLowerCase()) : [];
      for (const p of [...named, ...parts.filter((p) => !named.includes(p))]) {
        const got = await this.#tryPartition(p, a, work);
        if (got) return { ...got, partition: p.number };
      }
      throw new _Refused("kernel-not-found", `no partition of ${a.diskId} holds ${a.kernel} as a regular file`);
    } finally {
      release();
    }
  }

  async #partitions(kernelName: string): Promise<_Part[]> {
    const sys = `${this.#o.sys ?? "/sys"}/block/${kernelName}`;
    const parts: _Part[] = [];
    for (const name of await listDir(sys)) {
      if (!name.startsWith(kernelName)) continue;
      const number = await readInt(`${sys}/${name}/partition`);
      if (number === undefined) continue;
      const out = await _run(this.#tools.blkid, ["-p", "-o", "export", `${this.#o.dev ?? "/dev"}/${name}`]);
      const probe: Record<string, string> = {};
      for (const line of out.code === 0 ? out.stdout.split("\n") : []) {
        const eq = line.indexOf("=");
        if (eq > 0) probe[line.slice(0, eq)] = line.slice(eq + 1);
      }
      parts.push({ name, number, probe });
    }
    return parts.sort((x, y) => x.number - y.number);
  }

  /** Mounts `p` read-only and copies the kernel (and initrd) out when it holds them; `undefined` when it does not. */
  async #tryPartition(p: _Part, a: Extract<KexecLoadArgs, { source: "disk" }>, work: string) {
    const opts = _MOUNT_OPTS[p.probe["TYPE"] ?? ""];
    if (opts === undefined) return undefined;
    const mnt = `${work}/mnt`;
    await Deno.mkdir(mnt, { mode: 0o700 });
    const dev = `${this.#o.dev ?? "/dev"}/${p.name}`;
    const m = await _run(this.#tools.mount, ["-t", p.probe["TYPE"]!, "-o", opts, dev, mnt]);
    if (m.code !== 0) {
      await Deno.remove(mnt);
      this.#o.log?.warn({ partition: p.name, words: m.words }, "kexec.load: the partition does not mount");
      return undefined;
    }
    let got: { kernelSha256: string; initrdSha256: string | undefined } | undefined;
    let failure: { readonly error: unknown } | undefined;
    try {
      got = await _readFiles(mnt, a, p.number, work);
    } catch (e) {
      failure = { error: e };
    }
    const u = await _run(this.#tools.umount, [mnt]);
    if (u.code !== 0) throw new Error(`kexec.load: umount ${mnt}: ${u.words}`);
    await Deno.remove(mnt);
    if (failure) throw failure.error;
    return got;
  }
}

/** The kernel (and initrd) copied out of the filesystem mounted at `mnt`; `undefined` when it holds no kernel. */
async function _readFiles(mnt: string, a: Extract<KexecLoadArgs, { source: "disk" }>, partition: number, work: string) {
  const kernel = await resolveInside(mnt, a.kernel);
  if (kernel === undefined) return undefined;
  const kernelSha256 = await _copy(kernel, `${work}/kernel`, _KERNEL_MAX, "kernel");
  let initrdSha256: string | undefined;
  if (a.initrd !== undefined) {
    const initrd = await resolveInside(mnt, a.initrd);
    if (initrd === undefined) {
      throw new _Refused("initrd-not-found", `partition ${partition} holds ${a.kernel} but not ${a.initrd}`);
    }
    initrdSha256 = await _copy(initrd, `${work}/initrd`, _INITRD_MAX, "initrd");
  }
  return { kernelSha256, initrdSha256 };
}

/** Copies `from` to a new 0600 file `to`, at most `max` bytes, and returns the bytes' SHA-256. */
async function _copy(from: string, to: string, max: number, what: string): Promise<string> {
  const src = await Deno.open(from, { read: true });
  const dst = await Deno.open(to, { write: true, createNew: true, mode: 0o600 });
  const h = createHash("sha256");
  try {
    const buf = new Uint8Array(1 << 20);
    let total = 0;
    for (;;) {
      const n = await src.read(buf);
      if (n === null) break;
      total += n;
      if (total > max) throw new _Refused("too-large", `the ${what} is larger than ${max} bytes`);
      h.update(buf.subarray(0, n));
      for (let off = 0; off < n;) off += await dst.write(buf.subarray(off, n));
    }
    return h.digest("hex");
  } finally {
    src.close();
    dst.close();
  }
}

async function _run(cmd: string, args: string[]): Promise<{ code: number; stdout: string; words: string }> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  return {
    code: out.code,
    stdout,
    words: (new TextDecoder().decode(out.stderr).trim() || stdout.trim()).slice(0, 512),
  };
}
