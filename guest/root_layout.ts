/**
 * The boot layout of a layered root, from the kernel command line (seed 002 §Layered roots): `nvx_sandbox=1`,
 * the image's token `nvx_layer=distro,ADDRESS,FORMAT:IDENTITY` (FORMAT erofs or gpt) and, for an upper on scratch,
 * `nvx_scratch=ADDRESS,ext4`; without it the upper is a tmpfs in RAM. The layout stage also refuses a
 * configuration that names a scratch for an upper in RAM, or bounds a first partition for an EROFS image.
 *
 * @module
 */
import type { OverlayMode, RootConfig } from "../core/framing/mod.ts";
import { StageFailed } from "./root_errors.ts";

/** The layout the worker assembles. */
export interface RootLayout {
  readonly image: { readonly address: bigint; readonly format: "erofs" | "gpt"; readonly identity: string };
  readonly upper: { readonly kind: "scratch"; readonly address: bigint } | { readonly kind: "ram" };
}

function fail(msg: string): never {
  throw new StageFailed("layout", msg);
}

function address(s: string, token: string): bigint {
  if (!/^0x[0-9a-f]+$/i.test(s)) fail(`${token}: address ${JSON.stringify(s)} is not hexadecimal`);
  return BigInt(s);
}

/** Parses the kernel command line; refuses one without a layered root. */
export function parseLayout(cmdline: string): RootLayout {
  const tokens = cmdline.trim().split(/\s+/);
  if (!tokens.includes("nvx_sandbox=1")) fail("the kernel command line has no layered root (no nvx_sandbox=1)");
  const layers = tokens.filter((t) => t.startsWith("nvx_layer="));
  if (layers.length !== 1) fail(`the kernel command line names ${layers.length} image layers, not 1`);
  const [name, addr, typed, ...more] = layers[0]!.slice("nvx_layer=".length).split(",");
  if (name !== "distro" || addr === undefined || typed === undefined || more.length > 0) {
    fail(`malformed ${layers[0]}`);
  }
  const colon = typed.indexOf(":");
  const format = typed.slice(0, colon);
  const identity = typed.slice(colon + 1);
  if (colon < 0 || (format !== "erofs" && format !== "gpt") || identity === "") fail(`malformed ${layers[0]}`);
  const scratches = tokens.filter((t) => t.startsWith("nvx_scratch="));
  if (scratches.length > 1) fail("the kernel command line names more than one scratch");
  let upper: RootLayout["upper"] = { kind: "ram" };
  if (scratches.length === 1) {
    const [a, fs, ...rest] = scratches[0]!.slice("nvx_scratch=".length).split(",");
    if (a === undefined || fs !== "ext4" || rest.length > 0) fail(`malformed ${scratches[0]}`);
    upper = { kind: "scratch", address: address(a, "nvx_scratch") };
  }
  return { image: { address: address(addr, "nvx_layer"), format, identity }, upper };
}

/** Checks that the worker assembles this layout with this configuration. */
export function checkLayout(config: RootConfig, layout: RootLayout): void {
  if (layout.upper.kind === "ram" && config.scratchSectors !== undefined) {
    fail("the configuration names a scratch for an upper in RAM");
  }
  if (layout.upper.kind === "ram" && config.scratchJournal !== undefined) {
    fail("the configuration names a journal policy for an upper in RAM");
  }
  if (layout.image.format === "erofs" && config.firstPartitionBound !== undefined) {
    fail("the configuration bounds a first partition for an EROFS image");
  }
}

/**
 * The overlay's options of a mode: the default, which trusts its lowers, follows and creates redirects and copies
 * up a file's metadata alone; untrusted lowers get neither, so a lower directory's rename fails with EXDEV and a
 * copy-up copies the data too.
 */
export function overlayModeOptions(mode: OverlayMode | undefined): string {
  return (mode ?? "trusted-lowers") === "trusted-lowers"
    ? "redirect_dir=on,metacopy=on"
    : "redirect_dir=nofollow,metacopy=off";
}
