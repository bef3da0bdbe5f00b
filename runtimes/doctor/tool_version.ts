/**
 * A host tool's version for `doctor`: its version flag run with a bound in time; a tool that is not installed (or may
 * not be run) is `null`, never an error.
 *
 * @module
 */

/** The first line of a tool's version output, `null` when it is not installed (or not runnable). */
export async function toolVersion(tool: string, args: readonly string[], timeoutMs = 10_000): Promise<string | null> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(tool, {
      args: [...args],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(timeoutMs),
    }).output();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.PermissionDenied) return null;
    if (e instanceof Deno.errors.NotCapable) return null; // the agent's flags do not let it run this tool
    if (e instanceof DOMException && (e.name === "TimeoutError" || e.name === "AbortError")) return null; // hung
    throw e;
  }
  if (!out.success) return null;
  const dec = new TextDecoder();
  const line = (dec.decode(out.stdout).trim() || dec.decode(out.stderr).trim()).split("\n")[0] ?? "";
  return line.slice(0, 200) || "installed";
}
