/**
 * Test fixtures for identity rebind: a real host key and OpenSSH host certificate made by `ssh-keygen` (when it is
 * installed), and bundles built from them.
 *
 * @module
 */
import { decodeHeader, isZeroBlock } from "../images/tar_header.ts";
import { REBIND_ANSWER_OFFSET, REBIND_ANSWER_WORD } from "./image.ts";

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

/**
 * Plays the guest half on the rebind disk's file at `path` (what `bc-rebind@.service`'s script does): reads `nonce`
 * from the tar at its start and writes `BCREBOUND <nonce>` at the start of its last 4 KiB; false when the tar holds no
 * nonce.
 */
export function answerRebindAsGuest(path: string): boolean {
  const f = Deno.openSync(path, { read: true, write: true });
  try {
    const head = new Uint8Array(REBIND_ANSWER_OFFSET);
    let n = 0;
    while (n < head.length) {
      const r = f.readSync(head.subarray(n));
      if (r === null) break;
      n += r;
    }
    const nonce = _tarMember(head.subarray(0, n), "nonce");
    if (nonce === undefined) return false;
    f.seekSync(REBIND_ANSWER_OFFSET, Deno.SeekMode.Start);
    const line = new TextEncoder().encode(`${REBIND_ANSWER_WORD} ${new TextDecoder().decode(nonce).trim()}\n`);
    for (let off = 0; off < line.length;) off += f.writeSync(line.subarray(off));
    return true;
  } finally {
    f.close();
  }
}

/** Member `name` of the ustar archive `tar` (`tar -xO`), or `undefined`. */
function _tarMember(tar: Uint8Array, name: string): Uint8Array | undefined {
  for (let at = 0; at + 512 <= tar.length;) {
    const block = tar.subarray(at, at + 512);
    if (isZeroBlock(block)) return undefined;
    const h = decodeHeader(block);
    if (h.size < 0) return undefined;
    if (new TextDecoder().decode(h.name) === name) return tar.subarray(at + 512, at + 512 + h.size);
    at += 512 + Math.ceil(h.size / 512) * 512;
  }
  return undefined;
}
