/**
 * `bcd-guest bundle check FILE` and `bcd-guest bundle install --root DIR --version V FILE`: the config-bundle
 * safety kernel and the versioned tree of seed 004 as a tool. Each prints one JSON object on stdout:
 * `{"ok":true,...}` (exit 0), `{"ok":false,"reason":R,"message":M}` for an unsafe bundle (exit 3), or
 * `{"ok":false,"error":"internal","message":M}` (exit 1); usage errors, a bad version included, exit 2: `--version ""`
 * installs no tree and so takes no FILE (seed 004: `""` only with no chunks), with one it is an invalid argument.
 *
 * The flip link is made by `ln -s` ({@link lnSymlink}): Deno allows `Deno.symlink` only under an unscoped
 * `--allow-write`, and the guest role runs programs but writes only where it is granted (its own directory, and for
 * this subcommand the `--root` the user names, granted by its launcher: `roles/permissions.ts` `ARG_GRANTS`). A failed
 * install leaves nothing behind ({@link Tree.install}).
 *
 * @module
 */
import { MAX_WIRE_BYTES, Tree, UnsafeBundle, walk } from "../core/images/mod.ts";
import { lnSymlink } from "../guest/config_install.ts";
import { EXIT_INTERNAL, EXIT_OK, EXIT_REFUSED, printOut, type Subcommand, UsageError } from "./_cli.ts";

async function _read(path: string): Promise<Uint8Array> {
  const st = await Deno.stat(path);
  if (st.size > MAX_WIRE_BYTES) {
    throw new UnsafeBundle("wire-too-large", `${st.size} compressed bytes exceed ${MAX_WIRE_BYTES}`);
  }
  return await Deno.readFile(path);
}

async function _judge(fn: () => Promise<Record<string, unknown>>): Promise<number> {
  try {
    printOut(JSON.stringify({ ok: true, ...(await fn()) }));
    return EXIT_OK;
  } catch (e) {
    if (e instanceof UnsafeBundle) {
      printOut(JSON.stringify({ ok: false, reason: e.reason, message: e.message }));
      return EXIT_REFUSED;
    }
    printOut(JSON.stringify({ ok: false, error: "internal", message: e instanceof Error ? e.message : String(e) }));
    return EXIT_INTERNAL;
  }
}

function _one(positionals: string[], what: string): string {
  if (positionals.length !== 1 || positionals[0] === "") throw new UsageError(`${what}: exactly one FILE is needed`);
  return positionals[0]!;
}

/** The `bundle` command group of the guest role. */
export const BUNDLE_COMMAND: Subcommand = {
  summary: "check or install a config bundle (seed 004)",
  sub: {
    check: {
      summary: "run the safety kernel over a gzip-compressed tar: FILE",
      positionals: true,
      run: ({ positionals }) => {
        const file = _one(positionals, "bundle check");
        return _judge(async () => ({ ...(await walk(await _read(file))) }));
      },
    },
    install: {
      summary: "install a bundle into a versioned tree: --root DIR --version V FILE",
      options: { root: { type: "string" }, version: { type: "string" } },
      positionals: true,
      run: ({ values, positionals }) => {
        const root = values.root;
        const version = values.version;
        if (typeof root !== "string" || root === "") throw new UsageError("bundle install: --root DIR is needed");
        if (typeof version !== "string") throw new UsageError("bundle install: --version V is needed");
        if (version !== "" && (!/^[A-Za-z0-9_-]+$/.test(version) || version === "current")) {
          throw new UsageError(`bundle install: version ${JSON.stringify(version)} is not allowed`);
        }
        if (version === "" && positionals.length > 0) {
          throw new UsageError('bundle install: invalid argument: version "" installs no tree and takes no FILE');
        }
        const file = version === "" ? null : _one(positionals, "bundle install");
        return _judge(async () => {
          await new Tree(root, { symlink: lnSymlink }).install(
            version,
            file === null ? new Uint8Array(0) : await _read(file),
          );
          return { root, version };
        });
      },
    },
  },
};
