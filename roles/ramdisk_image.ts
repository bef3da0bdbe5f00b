/**
 * `make ramdisk`: bundles `bcd-ramdisk` and `bcd-helper` (as `make bundle` does, into `dist/`) and builds the
 * provisioning ramdisk from them into `dist/ramdisk/` (`runtimes/ramdisk_image/`): `vmlinuz` + `initrd` for iPXE,
 * `bcd-ramdisk.iso` for virtual media, `initrd.contents`. Prints the sizes and which wanted modules the kernel builds
 * in or lacks.
 *
 * usage: deno task build:ramdisk [--out DIR] [--kernel-dir DIR] [--gateway-ca PEM] [--cmdline TEXT] [--no-iso]
 *   --kernel-dir   an unpacked Debian kernel (boot/vmlinuz-*, lib/modules/*); default BCD_TEST_KERNEL_DIR or
 *                  /var/cache/bcd-test-kernel/root (.ci/prepare_kernel.sh's cloud kernel)
 *   --gateway-ca   the CA of the gateway's certificate, built in as /etc/bcd/gateway-ca.pem
 *   --cmdline      the ISO's kernel command line (default: the consoles; a site's lease adds the join)
 *
 * @module
 */
import { parseArgs } from "node:util";
import {
  buildRamdisk,
  DEFAULT_CMDLINE,
  DEFAULT_KERNEL_DIR,
  findKernel,
  RAMDISK_TOOLS,
} from "../runtimes/ramdisk_image/mod.ts";
import { bundleRole } from "./build.ts";

const ROOT = new URL("../", import.meta.url).pathname;

function _say(line: string): void {
  Deno.stderr.writeSync(new TextEncoder().encode(line + "\n"));
}

async function _buildId(): Promise<string> {
  const out = await new Deno.Command("git", { args: ["rev-parse", "--short=12", "HEAD"], cwd: ROOT, stdout: "piped" })
    .output();
  return out.success ? new TextDecoder().decode(out.stdout).trim() : "unknown";
}

const MiB = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      out: { type: "string" },
      "kernel-dir": { type: "string" },
      "gateway-ca": { type: "string" },
      cmdline: { type: "string" },
      "no-iso": { type: "boolean" },
    },
  });
  const kernel = findKernel(values["kernel-dir"] ?? Deno.env.get("BCD_TEST_KERNEL_DIR") ?? DEFAULT_KERNEL_DIR);
  if ("missing" in kernel) {
    _say(`make ramdisk: no kernel: ${kernel.missing}`);
    Deno.exit(2);
  }
  const packages: Record<string, string> = {
    "/bin/busybox": "busybox-static",
    "/usr/sbin/kexec": "kexec-tools",
    "/usr/sbin/e2fsck": "e2fsprogs",
    "/usr/sbin/resize2fs": "e2fsprogs",
    "/usr/sbin/mkfs.vfat": "dosfstools",
    "/usr/bin/mcopy": "mtools",
  };
  for (const path of ["/bin/busybox", ...RAMDISK_TOOLS]) {
    const pkg = packages[path] ?? "util-linux";
    try {
      await Deno.stat(path);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
      _say(`make ramdisk: ${path} is missing (apt install ${pkg})`);
      Deno.exit(2);
    }
  }
  const build = await _buildId();
  const bundles = { ramdisk: await bundleRole("ramdisk", build), helper: await bundleRole("helper", build) };
  const a = await buildRamdisk({
    out: values.out ?? `${ROOT}dist/ramdisk`,
    kernel,
    busybox: "/bin/busybox",
    bundles,
    ...(values["gateway-ca"] ? { gatewayCaPem: await Deno.readTextFile(values["gateway-ca"]) } : {}),
    isoCmdline: values["no-iso"] ? false : values.cmdline ?? DEFAULT_CMDLINE,
  });
  _say(`kernel ${kernel.version}: ${a.vmlinuz} ${MiB(a.sizes.vmlinuz)}`);
  _say(`initramfs: ${a.initrd} ${MiB(a.sizes.initrd)} (listing ${a.contents})`);
  if (a.iso) _say(`ISO: ${a.iso} ${MiB(a.sizes.iso ?? 0)}`);
  _say(`modules loaded: ${a.modules.load.map((m) => m.name).join(" ")}`);
  _say(`built into the kernel: ${a.modules.builtin.join(" ") || "none"}`);
  _say(`not in this kernel: ${a.modules.absent.join(" ") || "none"}`);
}
