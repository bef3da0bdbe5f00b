/**
 * `bcd-node image check --format qcow2|raw|iso PATH` and `bcd-node image check-overlay (--backing PATH
 * --backing-format FMT | --no-backing) OVERLAY`: the tenant-image checks of seed 000 §Tenant images as a tool.
 * Each prints one JSON object on stdout: `{"ok":true,...}` (exit 0), `{"ok":false,"reason":R,"message":M}` (exit 3),
 * or `{"ok":false,"error":"internal","message":M}` (exit 1, e.g. the file cannot be read); usage errors exit 2.
 *
 * @module
 */
import type { ImageFormat, Qcow2Header } from "../core/images/mod.ts";
import { EXIT_INTERNAL, EXIT_OK, EXIT_REFUSED, printOut, type Subcommand, UsageError } from "./_cli.ts";

/**
 * The image checks, loaded when a command runs: this file is in the node's entry graph, and the daemon's start never
 * needs the checks' ~20 modules (a runtime that does loads them itself; issue 24).
 */
type _Images = typeof import("../core/images/mod.ts");

const _FORMATS: readonly ImageFormat[] = ["qcow2", "raw", "iso"];

function _header(h: Qcow2Header): Record<string, unknown> {
  return {
    version: h.version,
    cluster_bits: h.clusterBits,
    virtual_size: Number(h.virtualSize),
    backing_file: h.backingFile,
    backing_format: h.backingFormat,
  };
}

async function _judge(fn: (images: _Images) => Promise<Record<string, unknown>>): Promise<number> {
  const images = await import("../core/images/mod.ts");
  try {
    printOut(JSON.stringify({ ok: true, ...(await fn(images)) }));
    return EXIT_OK;
  } catch (e) {
    if (e instanceof images.ImageRefused) {
      printOut(JSON.stringify({ ok: false, reason: e.reason, message: e.message }));
      return EXIT_REFUSED;
    }
    if (e instanceof UsageError) throw e;
    printOut(JSON.stringify({ ok: false, error: "internal", message: e instanceof Error ? e.message : String(e) }));
    return EXIT_INTERNAL;
  }
}

function _one(positionals: string[], what: string): string {
  if (positionals.length !== 1 || positionals[0] === "") throw new UsageError(`${what}: exactly one PATH is needed`);
  return positionals[0]!;
}

/** The `image` command group of the node role. */
export const IMAGE_COMMAND: Subcommand = {
  summary: "check tenant images and instance overlays (seed 000 §Tenant images)",
  sub: {
    check: {
      summary: "check a base image: --format qcow2|raw|iso PATH (raw and iso are never probed)",
      options: { format: { type: "string" } },
      positionals: true,
      run: ({ values, positionals }) => {
        const format = values.format;
        if (typeof format !== "string" || !_FORMATS.includes(format as ImageFormat)) {
          throw new UsageError("image check: --format must be qcow2, raw or iso");
        }
        const path = _one(positionals, "image check");
        return _judge(async ({ checkImage }) => {
          const r = await checkImage(path, format as ImageFormat);
          return { format: r.format, probed: r.probed, ...(r.header ? _header(r.header) : {}) };
        });
      },
    },
    "check-overlay": {
      summary: "check an instance disk: (--backing PATH --backing-format qcow2|raw | --no-backing) OVERLAY",
      options: {
        backing: { type: "string" },
        "backing-format": { type: "string" },
        "no-backing": { type: "boolean" },
      },
      positionals: true,
      run: ({ values, positionals }) => {
        const backing = values.backing;
        const fmt = values["backing-format"];
        const none = values["no-backing"] === true;
        if (none && (backing !== undefined || fmt !== undefined)) {
          throw new UsageError("image check-overlay: --no-backing excludes --backing and --backing-format");
        }
        if (!none && (typeof backing !== "string" || backing === "" || (fmt !== "qcow2" && fmt !== "raw"))) {
          throw new UsageError(
            "image check-overlay: give --backing PATH and --backing-format qcow2|raw, or --no-backing",
          );
        }
        const path = _one(positionals, "image check-overlay");
        const expected = none ? null : { path: backing as string, format: fmt as "qcow2" | "raw" };
        return _judge(async ({ checkOverlay }) => _header(await checkOverlay(path, expected)));
      },
    },
  },
};
