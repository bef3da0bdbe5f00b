/** Bundles made by real GNU tar for the config delivery tests (`transform` renames members: hostile bundles). */
import { join } from "node:path";

/** A gzip-tar of `files` (path → text) made by GNU tar. */
export async function tarBundle(files: Record<string, string>, transform?: string): Promise<Uint8Array> {
  const dir = await Deno.makeTempDir({ prefix: "bcd-cfg-bundle-" });
  try {
    for (const [name, text] of Object.entries(files)) {
      await Deno.mkdir(join(dir, "src", name, ".."), { recursive: true });
      await Deno.writeTextFile(join(dir, "src", name), text);
    }
    const args = ["-czf", join(dir, "b.tgz"), ...(transform ? ["-P", `--transform=${transform}`] : [])];
    const out = await new Deno.Command("tar", { args: [...args, "-C", join(dir, "src"), "."], stderr: "piped" })
      .output();
    if (!out.success) throw new Error(`tar failed: ${new TextDecoder().decode(out.stderr)}`);
    return await Deno.readFile(join(dir, "b.tgz"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
