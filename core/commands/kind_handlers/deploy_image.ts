/**
 * `deploy.image` (provision lane, ramdisk, destructive, an hour): root streams the image at `url` onto the target disk
 * named by its `/dev/disk/by-id` path (the helper's `disk.deploy`: https only, SHA-256 while streaming, partition
 * table re-read, read-back verify; a failure after a write zeroes the first MiB). The result is the target, the bytes
 * written and the digest verified.
 *
 * Payload, as this handler reads it (`DeployImagePayload`), judgement calls written down:
 *
 * - `target_device`: a `/dev/disk/by-id` path or bare by-id name; anything else is `invalid-payload` before queueing;
 * - `sha256`: 64 hex digits (either case), required: an image is never written unchecked;
 * - `format`: `raw` (or empty) or `qcow2`, as stated, never probed: root converts a qcow2 while it streams with its
 *   own reader, header checks first (`core/disks/qcow2_stream.ts`), never a tool that follows backing references;
 *   any other format fails `unsupported-format` before root is asked;
 * - `grow_root`: root grows the image's last partition to the disk's end (its own GPT/MBR rewrite) and an ext2/3/4
 *   filesystem in it (`e2fsck -f -p`, `resize2fs`); another filesystem is left for cloud-init and the result says
 *   `filesystem_resized: false`;
 * - `config_drive`: a cloud-init NoCloud drive (vfat, label `CIDATA`, `meta-data`/`user-data`/`network-config`) in a
 *   16 MiB partition root adds at the disk's end; `meta_data` must not be empty (cloud-init needs an instance-id), each
 *   file at most 64 KiB (`invalid-payload` otherwise).
 *
 * A refusal or failure of root is the command's failure with root's reason as its code (`mounted`, `digest-mismatch`,
 * `verify-failed`, `not-https`, `too-large`, `partition-table`, …) and whether the boot area was zeroed.
 *
 * @module
 */
import { packResult, unpackPayload, WireDecodeError } from "../../../proto/mod.ts";
import type { DiskDeployAnswer } from "../../disks/mod.ts";
import { isDiskId } from "../../disks/disk_id.ts";
import type { HandlerContext, HandlerResult, KindHandler } from "../handlers.ts";
import { CommandFailed, InvalidPayload } from "../rejection.ts";

/** What root is asked to deploy (the helper's `disk.deploy` arguments). */
export interface DeployRequest {
  readonly diskId: string;
  readonly url: string;
  readonly sha256: string;
  readonly format: "raw" | "qcow2";
  readonly growRoot?: boolean;
  /** `userData` in base64. */
  readonly configDrive?: { readonly metaData: string; readonly userData: string; readonly networkConfig?: string };
}

/** Root's deploy of one image onto one disk. */
export interface ImageDeployer {
  deploy(a: DeployRequest): Promise<DiskDeployAnswer>;
}

/** Each config drive file's bound (the helper's too). */
const _MAX_FILE = 64 * 1024;

const _BY_ID = "/dev/disk/by-id/";

/** The `deploy.image` handler. */
export function deployImageHandler(ports: { deployer: ImageDeployer }): KindHandler {
  return {
    kind: "deploy.image",
    resources(command) {
      return [`disk:${_BY_ID}${_payload(command.payload).diskId}`];
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      const p = _payload(ctx.command.payload);
      if (p.format !== "raw" && p.format !== "qcow2") {
        throw new CommandFailed("unsupported-format", `deploy.image: format ${p.format} is not raw or qcow2`);
      }
      const a = await ports.deployer.deploy({
        diskId: p.diskId,
        url: p.url,
        sha256: p.sha256,
        format: p.format,
        ...(p.growRoot ? { growRoot: true } : {}),
        ...(p.configDrive ? { configDrive: p.configDrive } : {}),
      });
      if (!a.ok) {
        const zeroed = a.zeroedBootArea ? " (its first MiB zeroed: not bootable)" : " (the disk was not written)";
        throw new CommandFailed(a.reason, `deploy.image: ${p.diskId}: ${a.message}${zeroed}`);
      }
      ctx.logger.info({ disk_id: p.diskId, written: a.writtenBytes }, "image deployed and verified");
      const any = packResult("deploy.image", {
        target_device: `${_BY_ID}${p.diskId}`,
        written_bytes: a.writtenBytes,
        sha256: a.sha256,
        ...(a.grown
          ? {
            grown_partition: a.grown.partition,
            grown_partition_bytes: a.grown.sizeBytes,
            filesystem_resized: a.grown.resized,
          }
          : {}),
        ...(a.configDrivePartition ? { config_drive_partition: a.configDrivePartition } : {}),
      });
      return { result: { typeUrl: any.type_url, value: any.value } };
    },
  };
}

function _payload(p: { typeUrl: string; value: Uint8Array } | undefined) {
  if (p === undefined) throw new InvalidPayload("deploy.image: no payload");
  let w;
  try {
    w = unpackPayload("deploy.image", { type_url: p.typeUrl, value: p.value });
  } catch (e) {
    if (e instanceof WireDecodeError) throw new InvalidPayload(e.message, { cause: e });
    throw e;
  }
  const target = w.target_device ?? "";
  const diskId = target.startsWith(_BY_ID) ? target.slice(_BY_ID.length) : target;
  if (!isDiskId(diskId)) {
    throw new InvalidPayload(`deploy.image: target ${JSON.stringify(target)} is not a /dev/disk/by-id path`);
  }
  const url = w.url ?? "";
  if (!url.startsWith("https://")) throw new InvalidPayload(`deploy.image: url ${JSON.stringify(url)} is not https`);
  const sha256 = (w.sha256 ?? "").toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(sha256)) {
    throw new InvalidPayload(`deploy.image: sha256 ${JSON.stringify(w.sha256)} is not 64 hex digits`);
  }
  const cd = w.config_drive;
  let configDrive: DeployRequest["configDrive"];
  if (cd) {
    const meta = cd.meta_data ?? "";
    const user = cd.user_data ?? new Uint8Array();
    const net = cd.network_config ?? "";
    const enc = new TextEncoder();
    if (meta === "") throw new InvalidPayload("deploy.image: config_drive.meta_data is empty (cloud-init needs one)");
    for (
      const [name, n] of [["meta_data", enc.encode(meta).length], ["user_data", user.length], [
        "network_config",
        enc.encode(net).length,
      ]] as const
    ) {
      if (n > _MAX_FILE) {
        throw new InvalidPayload(`deploy.image: config_drive.${name} is ${n} bytes (at most ${_MAX_FILE})`);
      }
    }
    configDrive = {
      metaData: meta,
      userData: btoa(Array.from(user, (b) => String.fromCharCode(b)).join("")),
      ...(net ? { networkConfig: net } : {}),
    };
  }
  return { diskId, url, sha256, format: w.format || "raw", growRoot: w.grow_root === true, configDrive };
}
