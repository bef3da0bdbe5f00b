/**
 * Test support for the real sshd: whether this machine can run it, and a temp ssh directory (its own host key, an
 * `sshd_config` that includes `sshd_config.d/*.conf` first, as Debian's does, and a pid file) the helper's
 * `[access] ssh_dir` is redirected to. The directory is made under `/run` when it can be: sshd's StrictModes refuses
 * principals files under a world-writable parent such as `/tmp`.
 *
 * @module
 */

/** The sshd binary (sshd re-executes itself, so it must be an absolute path). */
export const SSHD = "/usr/sbin/sshd";

function _which(bin: string): boolean {
  for (const dir of ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]) {
    try {
      if (Deno.statSync(`${dir}/${bin}`).isFile) return true;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
  }
  return false;
}

/** Why the real sshd tests cannot run here, or `undefined` when they can. */
export function sshdMissing(): string | undefined {
  if (Deno.build.os !== "linux") return "not Linux";
  for (const b of ["sshd", "ssh-keygen", "ssh"]) if (!_which(b)) return `${b} is not installed (Debian openssh-server)`;
  if (Deno.uid() !== 0) return "not root: sshd needs its privilege separation directory and root to log in as";
  return undefined;
}

/** Prints why a real-sshd test is skipped and returns the `ignore` flag. */
export function ignoreWithoutSshd(name: string): boolean {
  const why = sshdMissing();
  if (why !== undefined) console.error(`skipping "${name}": ${why}`);
  return why !== undefined;
}

/** A temp ssh directory for one test. */
export interface SshDir {
  readonly dir: string;
  readonly sshdConfig: string;
  readonly pidFile: string;
  readonly hostKey: string;
  /** Writes the main config again with `extra` lines appended (e.g. a bad option). */
  writeConfig(extra?: string): Promise<void>;
  cleanup(): Promise<void>;
}

async function _run(bin: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(bin, { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) throw new Error(`${bin} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
}

/** Makes a temp ssh directory with a host key and a main config. */
export async function makeSshDir(): Promise<SshDir> {
  await Deno.mkdir("/run/sshd", { recursive: true, mode: 0o755 });
  let dir: string;
  try {
    dir = await Deno.makeTempDir({ dir: "/run", prefix: "bcd-access-test-" });
  } catch (e) {
    if (!(e instanceof Deno.errors.PermissionDenied)) throw e;
    dir = await Deno.makeTempDir({ prefix: "bcd-access-test-" });
  }
  await Deno.chmod(dir, 0o755);
  const hostKey = `${dir}/ssh_host_ed25519_key`;
  await _run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", hostKey]);
  const sshdConfig = `${dir}/sshd_config`;
  const pidFile = `${dir}/sshd.pid`;
  const writeConfig = (extra = "") =>
    Deno.writeTextFile(
      sshdConfig,
      [
        `Include ${dir}/sshd_config.d/*.conf`,
        `HostKey ${hostKey}`,
        `PidFile ${pidFile}`,
        "AuthorizedKeysFile none",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PermitRootLogin prohibit-password",
        "UsePAM no",
        extra,
        "",
      ].join("\n"),
    );
  await writeConfig();
  return {
    dir,
    sshdConfig,
    pidFile,
    hostKey,
    writeConfig,
    cleanup: () => Deno.remove(dir, { recursive: true }),
  };
}

/** Every file under `dir` but the ones `makeSshDir` wrote, by relative name, with its bytes as base64. */
export async function filesUnder(dir: string, skip: readonly string[] = []): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (sub: string) => {
    for await (const e of Deno.readDir(`${dir}${sub}`)) {
      const rel = `${sub}/${e.name}`.slice(1);
      if (skip.includes(rel)) continue;
      if (e.isDirectory) await walk(`${sub}/${e.name}`);
      else out.set(rel, btoa(String.fromCharCode(...await Deno.readFile(`${dir}/${rel}`))));
    }
  };
  await walk("");
  return out;
}
