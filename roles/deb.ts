/**
 * `make deb` (`deno task deb`): Debian packages of the bundled agents, built with `dpkg-deb`, installed as operators
 * install (`apt install ./bcd-node_<v>_amd64.deb`).
 *
 * | package      | holds                                                                        | unit                  |
 * | ------------ | ---------------------------------------------------------------------------- | --------------------- |
 * | `bcd-helper` | `/usr/lib/bcd/bcd-helper/` (the bundle), `/usr/sbin/bcd-helper`, `/etc/bcd/config.toml` (conffile), the `bcd` user and group, `/var/lib/bcd`, `/var/lib/bcd-site` (0750 bcd:bcd), `/opt/bcd/releases/` | `bcd-helper.service` (root) |
 * | `bcd-node`   | `/usr/lib/bcd/bcd-node/` (the release as shipped), copied at configure into the self-update's `/opt/bcd/releases/<version>/`, `current` set when absent | `bcd-node.service` (user bcd) |
 * | `bcd-site`   | the same for the site agent (conflicts with `bcd-node`: one `current` per host) | `bcd-site.service` (user bcd) |
 *
 * The agents' units run `/opt/bcd/current/bcd-<role> run`, so a self-update (which the helper swaps under
 * `/opt/bcd/`) takes effect at their restart, and dpkg's own files under `/usr/lib/bcd/` are never touched by it. The
 * helper is not self-updated: it changes only with its package. Maintainer scripts honour `DPKG_ROOT` (dpkg
 * `--force-script-chrootless`), so a test installs into a root it makes without a chroot.
 *
 * usage: deno task deb [--out DIR] [--fast]   (--fast: gzip -1 instead of xz, for tests)
 *
 * @module
 */
import { parseArgs } from "node:util";
import { AGENT_VERSION } from "../core/version.ts";
import { bundleRole } from "./build.ts";
import { setprivDrop } from "../core/setpriv.ts";
import { AGENT_DENO_DIR, AGENT_USER, HELPER_DENO_DIR } from "../runtimes/daemon/code_cache.ts";

/** The postinst's drop to the agent's ids (read from the root's /etc/passwd into $uid and $gid). */
const SETPRIV_DROP = setprivDrop('"$uid"', '"$gid"').join(" ");

const ROOT = new URL("../", import.meta.url).pathname;

/** A package this builds. */
export type DebPackage = "bcd-helper" | "bcd-node" | "bcd-site";
export const DEB_PACKAGES: readonly DebPackage[] = ["bcd-helper", "bcd-node", "bcd-site"];

const MAINTAINER = "bcd maintainers <bcd@example.invalid>";

/** The config the helper package installs as a conffile: every key commented, at its default. */
export const CONFIG_TOML = `# /etc/bcd/config.toml — read by bcd-helper and the agent beside it (bcd-node or bcd-site).
# Every key is optional; the values shown are the defaults.
# data_dir = "/var/lib/bcd"            # bcd-site: "/var/lib/bcd-site"
# [gateway]
# url = "wss://gateway.example/v1/session"
# ca_file = "/etc/bcd/gateway-ca.pem"
# [helper]
# socket = "/run/bcd/helper.sock"
# node_group = "bcd"
# role = "node"                        # "site" beside bcd-site
# instance_bridges = ["br0"]
# libvirt_dynamic_ownership = false    # qemu.conf's dynamic_ownership; false: libvirt-qemu must be in node_group
# [daemon]
# releases_dir = "/opt/bcd"
# confirm_timeout_ms = 300000
# release_keys = []                    # base64 Ed25519 keys root trusts for releases; unset: the trust bundle's
#                                      # (identity.json, which the unprivileged agent writes: pin them here)
# [telemetry]
# metrics_port = 0                     # a loopback port for GET /metrics; 0: off
`;

/** The packages' copyright file (machine-readable format). */
const COPYRIGHT = `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: bcd
Source: the bcd repository

Files: *
Copyright: the bcd authors
License: bcd
 The bcd repository states the terms; the bundled Deno runtime is MIT-licensed (deno.land).
`;

/** A native package's changelog entry (fixed date: builds are reproducible). */
function _changelog(pkg: DebPackage, version: string): string {
  return `${pkg} (${version}) unstable; urgency=medium\n\n  * Built by make deb from the bcd repository.\n\n -- ${MAINTAINER}  Tue, 01 Dec 2026 00:00:00 +0000\n`;
}

function _unit(pkg: DebPackage): string {
  if (pkg === "bcd-helper") {
    return `[Unit]
Description=bcd root helper (the privileged half of bcd-node and bcd-site)
Documentation=file:///usr/share/doc/bcd-helper/README
After=network.target

[Service]
Type=simple
ExecStart=/usr/sbin/bcd-helper serve
Environment=DENO_DIR=${HELPER_DENO_DIR}
CacheDirectory=bcd-helper
CacheDirectoryMode=0700
Restart=on-failure
RestartSec=2s

[Install]
WantedBy=multi-user.target
`;
  }
  const role = pkg.slice(4);
  return `[Unit]
Description=bcd ${role} agent
Documentation=file:///usr/share/doc/${pkg}/README
Requires=bcd-helper.service
After=bcd-helper.service network-online.target
Wants=network-online.target

[Service]
Type=simple
User=bcd
Group=bcd
ExecStart=/opt/bcd/current/bcd-${role} run
Environment=DENO_DIR=${AGENT_DENO_DIR}
CacheDirectory=bcd
CacheDirectoryMode=0750
Restart=always
RestartSec=2s
NoNewPrivileges=yes

[Install]
WantedBy=multi-user.target
`;
}

function _control(pkg: DebPackage, version: string): string {
  const deps: Record<DebPackage, string> = {
    "bcd-helper": "libc6 (>= 2.27), passwd",
    "bcd-node": `libc6 (>= 2.27), bcd-helper (= ${version})`,
    "bcd-site": `libc6 (>= 2.27), bcd-helper (= ${version})`,
  };
  const what: Record<DebPackage, string> = {
    "bcd-helper": "root helper of the bcd host agents",
    "bcd-node": "bcd host agent for GPU and VPS hosts",
    "bcd-site": "bcd site agent (boot leases, image cache, BMC kinds)",
  };
  return [
    `Package: ${pkg}`,
    `Version: ${version}`,
    "Architecture: amd64",
    `Maintainer: ${MAINTAINER}`,
    `Depends: ${deps[pkg]}`,
    ...(pkg === "bcd-node" ? ["Conflicts: bcd-site"] : pkg === "bcd-site" ? ["Conflicts: bcd-node"] : []),
    "Section: admin",
    "Priority: optional",
    `Description: ${what[pkg]}`,
    " bcd is the agent a GPU/VPS cloud runs on every machine it manages.",
    ` This build is TypeScript on Deno, bundled with its pinned runtime.`,
    "",
  ].join("\n");
}

const _SYSTEMD = (unit: string, action: string) =>
  `if [ -z "$ROOT" ] && [ -d /run/systemd/system ]; then\n  systemctl daemon-reload\n  ${action} ${unit}\nfi\n`;

function _postinst(pkg: DebPackage, version: string): string {
  const head =
    `#!/bin/sh\nset -e\n# DPKG_ROOT: dpkg --force-script-chrootless installs into another root (tests).\nROOT="\${DPKG_ROOT:-}"\n`;
  if (pkg === "bcd-helper") {
    return `${head}if [ "$1" = configure ]; then
  P=""
  [ -n "$ROOT" ] && P="--prefix $ROOT"
  grep -q '^bcd:' "$ROOT/etc/group" || groupadd --system $P bcd
  grep -q '^bcd:' "$ROOT/etc/passwd" || useradd --system --gid bcd --home-dir /var/lib/bcd --no-create-home --shell /usr/sbin/nologin $P bcd
  uid=$(awk -F: '$1 == "bcd" { print $3 }' "$ROOT/etc/passwd")
  gid=$(awk -F: '$1 == "bcd" { print $3 }' "$ROOT/etc/group")
  for d in /var/lib/bcd /var/lib/bcd-site; do
    install -d -m 0750 "$ROOT$d"
    chown "$uid:$gid" "$ROOT$d"
  done
  install -d -m 0755 "$ROOT/opt/bcd" "$ROOT/opt/bcd/releases"
  # The unit's DENO_DIR, warmed by a no-op start through the path the unit runs (runtimes/daemon/code_cache.ts).
  install -d -m 0700 "$ROOT$(dirname ${HELPER_DENO_DIR})" "$ROOT${HELPER_DENO_DIR}"
  if ! env -i PATH=/usr/bin:/bin DENO_DIR="$ROOT${HELPER_DENO_DIR}" HOME="$ROOT${HELPER_DENO_DIR}" DENO_NO_UPDATE_CHECK=1 \
    "$ROOT/usr/sbin/bcd-helper" warm-cache >/dev/null; then
    echo "bcd-helper: warming the code cache failed; the helper compiles at its first start" >&2
  fi
${_SYSTEMD("bcd-helper.service", "systemctl enable --now").replace(/^/gm, "  ").trimEnd()}
fi
exit 0
`;
  }
  const role = pkg.slice(4);
  return `${head}VERSION=${version}
if [ "$1" = configure ]; then
  dest="$ROOT/opt/bcd/releases/$VERSION"
  if [ ! -d "$dest" ]; then
    rm -rf "$dest.dpkg-tmp"
    cp -a "$ROOT/usr/lib/bcd/${pkg}" "$dest.dpkg-tmp"
    mv "$dest.dpkg-tmp" "$dest"
  fi
  [ -e "$ROOT/opt/bcd/current" ] || ln -s "releases/$VERSION" "$ROOT/opt/bcd/current"
  test -x "$ROOT/opt/bcd/current/bcd-${role}"
  # The unit's DENO_DIR, warmed by a no-op start through the path the unit runs, as bcd (runtimes/daemon/code_cache.ts).
  uid=$(awk -F: '$1 == "${AGENT_USER}" { print $3 }' "$ROOT/etc/passwd")
  gid=$(awk -F: '$1 == "${AGENT_USER}" { print $4 }' "$ROOT/etc/passwd")
  cache="$ROOT${AGENT_DENO_DIR}"
  install -d -m 0750 -o "$uid" -g "$gid" "$(dirname "$cache")" "$cache"
  if ! setpriv ${SETPRIV_DROP} -- env -i PATH=/usr/bin:/bin DENO_DIR="$cache" HOME="$cache" DENO_NO_UPDATE_CHECK=1 \
    "$ROOT/opt/bcd/current/bcd-${role}" warm-cache >/dev/null; then
    echo "${pkg}: warming the code cache failed; the agent compiles at its first start" >&2
  fi
${_SYSTEMD(`${pkg}.service`, "systemctl enable").replace(/^/gm, "  ").trimEnd()}
fi
exit 0
`;
}

function _prerm(pkg: DebPackage): string {
  return `#!/bin/sh\nset -e\nROOT="\${DPKG_ROOT:-}"\nif [ "$1" = remove ]; then\n${
    _SYSTEMD(`${pkg}.service`, "systemctl stop").replace(/^/gm, "  ").trimEnd()
  }\nfi\nexit 0\n`;
}

async function _write(path: string, text: string, mode = 0o644): Promise<void> {
  await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
  await Deno.writeTextFile(path, text);
  await Deno.chmod(path, mode);
}

async function _run(cmd: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} failed (exit ${out.code}): ${new TextDecoder().decode(out.stderr)}`);
  }
}

/** Options of {@link buildDebs}. */
export interface DebOptions {
  /** Where the `.deb` files go (default `dist/deb`). */
  readonly out?: string;
  /** gzip -1 instead of xz (tests). */
  readonly fast?: boolean;
  /** Where the bundles are built (default a temp dir). */
  readonly work?: string;
  readonly build?: string;
}

/** Builds the three packages; returns their paths by package. */
export async function buildDebs(o: DebOptions = {}): Promise<Record<DebPackage, string>> {
  const out = o.out ?? `${ROOT}dist/deb`;
  const work = o.work ?? await Deno.makeTempDir({ prefix: "bcd-deb-" });
  const version = AGENT_VERSION;
  await Deno.mkdir(out, { recursive: true });
  const result = {} as Record<DebPackage, string>;
  for (const pkg of DEB_PACKAGES) {
    const role = pkg.slice(4) as "helper" | "node" | "site";
    const bundle = await bundleRole(role, o.build ?? "deb", `${work}/bundles`);
    const tree = `${work}/${pkg}`;
    await Deno.remove(tree, { recursive: true }).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
    await Deno.mkdir(`${tree}/usr/lib/bcd`, { recursive: true });
    await _run("cp", ["-a", bundle, `${tree}/usr/lib/bcd/${pkg}`]);
    await _write(`${tree}/lib/systemd/system/${pkg}.service`, _unit(pkg));
    await _write(`${tree}/usr/share/doc/${pkg}/README`, `${pkg} ${version}: see the bcd README.\n`);
    await _write(`${tree}/usr/share/doc/${pkg}/copyright`, COPYRIGHT);
    await _write(`${tree}/usr/share/doc/${pkg}/changelog`, _changelog(pkg, version));
    await _run("gzip", ["-9n", `${tree}/usr/share/doc/${pkg}/changelog`]);
    // The pinned Deno runtime is one static binary with its libraries inside; lintian sees them as embedded copies.
    await _write(
      `${tree}/usr/share/lintian/overrides/${pkg}`,
      `# The bundled Deno runtime (usr/lib/bcd/${pkg}/deno) is a single binary with its own libraries built in.\n` +
        `${pkg}: embedded-library lcms2 [usr/lib/bcd/${pkg}/deno]\n`,
    );
    await _write(`${tree}/DEBIAN/control`, _control(pkg, version));
    await _write(`${tree}/DEBIAN/postinst`, _postinst(pkg, version), 0o755);
    await _write(`${tree}/DEBIAN/prerm`, _prerm(pkg), 0o755);
    if (pkg === "bcd-helper") {
      await Deno.mkdir(`${tree}/usr/sbin`, { recursive: true });
      await Deno.symlink("../lib/bcd/bcd-helper/bcd-helper", `${tree}/usr/sbin/bcd-helper`);
      await _write(`${tree}/etc/bcd/config.toml`, CONFIG_TOML);
      await _write(`${tree}/DEBIAN/conffiles`, "/etc/bcd/config.toml\n");
    }
    const deb = `${out}/${pkg}_${version}_amd64.deb`;
    await _run("dpkg-deb", [
      "--root-owner-group",
      ...(o.fast ? ["-Zgzip", "-z1"] : ["-Zxz"]),
      "--build",
      tree,
      deb,
    ]);
    result[pkg] = deb;
  }
  if (o.work === undefined) await Deno.remove(work, { recursive: true });
  return result;
}

if (import.meta.main) {
  const { values } = parseArgs({ args: Deno.args, options: { out: { type: "string" }, fast: { type: "boolean" } } });
  const debs = await buildDebs({
    ...(values.out ? { out: values.out } : {}),
    ...(values.fast ? { fast: true } : {}),
  });
  for (const d of Object.values(debs)) Deno.stderr.writeSync(new TextEncoder().encode(`built ${d}\n`));
}
