/**
 * Test fixtures for identity rebind: a real host key and OpenSSH host certificate made by `ssh-keygen` (when it is
 * installed), and bundles built from them.
 *
 * @module
 */

/** A host key (PEM) and its certificate line, made by the real `ssh-keygen`; `undefined` without it. */
export async function realHostKey(): Promise<{ hostKey: string; hostCertificate: string } | undefined> {
  const dir = await Deno.makeTempDir({ prefix: "bcd-rebind-key-" });
  try {
    const run = async (args: string[]) => {
      const o = await new Deno.Command("ssh-keygen", { args, stdout: "null", stderr: "piped", stdin: "null" }).output();
      if (!o.success) throw new Error(`ssh-keygen ${args.join(" ")}: ${new TextDecoder().decode(o.stderr)}`);
    };
    try {
      await run(["-q", "-t", "ed25519", "-N", "", "-C", "host", "-f", `${dir}/hk`]);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw e;
    }
    await run(["-q", "-t", "ed25519", "-N", "", "-C", "ca", "-f", `${dir}/ca`]);
    await run(["-q", "-s", `${dir}/ca`, "-I", "restore-1", "-h", "-n", "restore-1.example", `${dir}/hk.pub`]);
    return {
      hostKey: await Deno.readTextFile(`${dir}/hk`),
      hostCertificate: await Deno.readTextFile(`${dir}/hk-cert.pub`),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A bundle's JSON bytes. */
export function bundleBytes(b: Record<string, unknown>): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(b));
}
