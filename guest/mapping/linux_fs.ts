/**
 * The Linux guest's {@link FsOps}: Deno's file API, util-linux `mount`, and a Web Worker as the other thread of
 * the read-only race. A read-only attach is never writable, even for an instant: util-linux 2.38 binds and then
 * remounts read-only, so the bind happens on a stub in a private staging tmpfs outside the root, is made
 * read-only, nosuid and nodev there, and only then moves onto its target.
 *
 * @module
 */
import { parseMountInfo } from "../proc/mountinfo.ts";
import { FsError, type FsOps, type MountRow, type NodeKind, type WriterRace } from "./fs_ops.ts";
import { settled } from "../../core/settled.ts";

async function run(args: string[]): Promise<void> {
  const out = await new Deno.Command("mount", { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    const why = new TextDecoder().decode(out.stderr).trim() || `status ${out.code}`;
    throw new FsError("EMOUNT", args.at(-1) ?? "", `mount ${args.join(" ")}: ${why}`);
  }
}

async function umount(target: string): Promise<void> {
  const out = await new Deno.Command("umount", { args: [target], stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    const why = new TextDecoder().decode(out.stderr).trim() || `status ${out.code}`;
    throw new FsError(/busy/i.test(why) ? "EBUSY" : "EMOUNT", target, `umount ${target}: ${why}`);
  }
}

/** Options of a {@link LinuxFs}. */
export interface LinuxFsOptions {
  /** A directory outside every root, for the staging tmpfs (created on the first attach). */
  readonly staging: string;
}

/** The Linux file system, as the mapper uses it. */
export class LinuxFs implements FsOps {
  #staged = false;
  #stub = 0;

  constructor(readonly opts: LinuxFsOptions) {}

  async lstat(path: string): Promise<NodeKind | null> {
    try {
      const st = await Deno.lstat(path);
      return st.isSymlink ? "link" : st.isDirectory ? "directory" : st.isFile ? "file" : "other";
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return null;
      throw e;
    }
  }

  mkdir(path: string): Promise<void> {
    return Deno.mkdir(path, { mode: 0o755 });
  }

  async createFile(path: string): Promise<void> {
    (await Deno.open(path, { write: true, createNew: true, mode: 0o644 })).close();
  }

  writeFile(path: string, text: string): Promise<void> {
    return Deno.writeTextFile(path, text);
  }

  readFile(path: string): Promise<string> {
    return Deno.readTextFile(path);
  }

  symlink(target: string, path: string): Promise<void> {
    return Deno.symlink(target, path);
  }

  async readDir(path: string): Promise<string[]> {
    const names: string[] = [];
    for await (const e of Deno.readDir(path)) names.push(e.name);
    return names.sort();
  }

  remove(path: string): Promise<void> {
    return Deno.remove(path, { recursive: true });
  }

  async #staging(): Promise<string> {
    const dir = this.opts.staging;
    if (!this.#staged) {
      await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
      await run(["-t", "tmpfs", "-o", "mode=0700,size=64k", "tmpfs", dir]);
      await run(["--make-private", dir]);
      this.#staged = true;
    }
    return dir;
  }

  async attach(source: string, target: string, readOnly: boolean): Promise<void> {
    const dir = await this.#staging();
    const stub = `${dir}/${this.#stub++}`;
    if ((await Deno.stat(source)).isDirectory) await Deno.mkdir(stub);
    else await this.createFile(stub);
    let bound = false;
    let failure: unknown = undefined;
    try {
      await run(["--bind", source, stub]);
      bound = true;
      await run(["-o", `remount,bind,${readOnly ? "ro," : ""}nosuid,nodev`, stub]);
      await run(["--move", stub, target]);
      bound = false;
    } catch (e) {
      failure = e;
      throw e;
    } finally {
      // After a failure, undoing is best effort (the failure is what the caller gets; the staging tmpfs is private
      // and goes with the root). After a success, the empty stub is removed and a failure to do so surfaces.
      if (bound) await umount(stub).catch((e) => void (failure ??= e));
      await Deno.remove(stub).catch((e) => {
        if (failure === undefined) throw e;
      });
    }
  }

  detach(target: string): Promise<void> {
    return umount(target);
  }

  mountProc(target: string): Promise<void> {
    return run(["-t", "proc", "-o", "nosuid,nodev,noexec", "proc", target]);
  }

  async mounts(): Promise<MountRow[]> {
    const rows = parseMountInfo(await Deno.readTextFile("/proc/self/mountinfo"));
    return rows.map((r) => ({ point: r.mountPoint, options: r.options }));
  }

  async sameFile(path: string, other: string): Promise<boolean> {
    const [a, b] = await Promise.all([Deno.stat(path), Deno.stat(other)]);
    return a.dev === b.dev && a.ino === b.ino;
  }

  async startWriter(path: string, watched: string): Promise<WriterRace> {
    const st = await Deno.stat(watched);
    const stop = new SharedArrayBuffer(4);
    const w = new Worker(new URL("./_writer_thread.ts", import.meta.url), { type: "module" });
    const ready = Promise.withResolvers<void>();
    const done = Promise.withResolvers<{ attempts: number; writable: number; denied: number }>();
    w.onmessage = (ev: MessageEvent) => {
      if (ev.data === "ready") ready.resolve();
      else done.resolve(ev.data as { attempts: number; writable: number; denied: number });
    };
    w.onerror = (ev) => {
      ev.preventDefault();
      const e = new Error(`the writer thread failed: ${ev.message}`);
      ready.reject(e);
      done.reject(e);
    };
    void settled(done.promise);
    w.postMessage({ path, dev: st.dev, ino: st.ino, stop });
    await ready.promise;
    return {
      async stop() {
        Atomics.store(new Int32Array(stop), 0, 1);
        let race;
        try {
          race = await done.promise;
        } finally {
          w.terminate();
        }
        if (race.denied > 0) {
          throw new FsError("EACCES", path, `the writer thread may not open ${path} for writing (Deno's permissions)`);
        }
        return { attempts: race.attempts, writable: race.writable };
      },
    };
  }

  /** Unmounts the staging tmpfs, once every mapping left it. */
  async close(): Promise<void> {
    if (!this.#staged) return;
    await umount(this.opts.staging);
    this.#staged = false;
  }
}
